// Package nodenet joins the node's pod network to the other nodes' and to the outside: routes
// to every other Node's pod CIDR through its InternalIP (host-gw) or through a VXLAN device
// (vxlan), worked out from the Node objects by a pure function (Desired) and applied by a
// Reconciler that also removes the stale routes, neighbours and forwarding entries it owns; and
// the iptables rules that let pod traffic through the FORWARD chain (Docker's policy is DROP)
// and masquerade it when it leaves the cluster CIDR, kept as data (Rules) and applied
// idempotently. The kernel sits behind Kernel (Netlink) and iptables behind IPTables
// (github.com/coreos/go-iptables); package fake holds in-memory ones for tests, and package
// nodenettest the contract suite run against both.
package nodenet
