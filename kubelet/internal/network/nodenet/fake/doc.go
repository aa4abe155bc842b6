// Package fake is the node network's kernel and iptables in memory, for unit tests of the
// kubelet's pod network: Kernel holds the routes, VXLAN device and entries the reconciler owns,
// IPTables the tables of a fresh network namespace; both keep the real ones' rules (checked by
// the nodenettest contract) and record every change for assertions.
package fake
