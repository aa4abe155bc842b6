// Package podsuite measures pod startup through a real kubelet against the
// same containers started directly through Docker with the same CNI network:
// a private apiserver and kubelet on their own node, bridge and pod CIDRs, so
// a cluster already running on the machine is never touched.
package podsuite
