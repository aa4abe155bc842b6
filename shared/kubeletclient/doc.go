// Package kubeletclient reaches a node's kubelet API the way every component does: the
// endpoint from the Node's status, HTTPS without verifying the kubelet's self-signed
// certificate (as kube-apiserver without --kubelet-certificate-authority), a bearer token.
package kubeletclient
