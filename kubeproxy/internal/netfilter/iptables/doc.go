// Package iptables implements netfilter.Interface with the machine's iptables commands:
// iptables-restore and iptables-save for whole payloads, github.com/coreos/go-iptables for
// single rules. It uses whichever backend the iptables alternatives point at (nf_tables or
// legacy), like everything else on the machine.
package iptables
