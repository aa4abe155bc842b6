// Package network is the kubelet's seam to pod networking: attach a pod sandbox's network
// namespace to the node's pod network and detach it. cninet implements it with libcni and the
// Debian containernetworking-plugins (bridge, host-local, loopback, portmap); fake implements
// it in memory for unit tests.
package network
