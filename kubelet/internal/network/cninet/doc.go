// Package cninet attaches pod sandboxes to the node's pod network through libcni and the
// containernetworking plugins: a bridge with host-local addresses on the node's podCIDR, the
// firewall plugin (Docker sets the FORWARD policy to DROP), portmap for hostPorts, and loopback.
// The configuration is built in memory from the podCIDR; nothing is read from /etc/cni.
package cninet
