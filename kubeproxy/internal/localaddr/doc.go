// Package localaddr makes an address local to the node, so that packets to it (a pod's DNS
// queries, routed through its bridge's gateway into the node) are delivered to the process
// listening on it: it puts the address, as a /32, on a dummy link of its own, or on the
// loopback link where the kernel has no dummy links.
package localaddr
