// Package netfiltertest is the contract of netfilter.Interface: one suite that the fake runs in
// unit tests and the iptables adapter runs against the kernel in a throwaway network namespace.
package netfiltertest
