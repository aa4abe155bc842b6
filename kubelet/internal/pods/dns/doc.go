// Package dns works out a pod's resolv.conf as Kubernetes' kubelet does: from its dnsPolicy
// (ClusterFirst, ClusterFirstWithHostNet, Default, None) and dnsConfig, the kubelet's
// --cluster-dns and --cluster-domain, and the node's resolver configuration. It is a pure
// function; the pod workers write what it returns and mount it into the pod's containers.
package dns
