// Package netfilter is the seam between kubeproxy and the kernel's packet filter: the few
// operations kubeproxy needs (restore a payload, save a table, keep jump rules first in a
// built-in chain, look for a chain). The iptables package implements it with the iptables
// commands and go-iptables; fake records what it is asked and keeps the chains in memory;
// netfiltertest holds the contract both pass.
package netfilter
