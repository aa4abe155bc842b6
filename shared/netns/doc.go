// Package netns runs code inside another network namespace, on a thread of its own, so that
// the sockets it opens and the processes it starts (iptables, ip) belong to that namespace: the
// kubelet dials a port inside a pod's namespace for port-forward, and tests and benchmarks
// program throwaway namespaces instead of the machine's.
package netns
