// Package netns runs a function inside another network namespace, on a thread of its own, so
// that the sockets it opens and the processes it starts (iptables, ip) belong to that
// namespace. kubeproxy itself runs in its node's namespace and never needs it; its tests and
// benchmarks use it to program a throwaway namespace instead of the machine's.
package netns
