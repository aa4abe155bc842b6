// Package proxier puts the ruleset into the kernel: it builds the rules for the current
// service ports, writes only what differs from what the kernel holds in one
// iptables-restore, and keeps the jumps from the built-in chains in place. It never flushes
// on exit, so Services keep working while kubeproxy is stopped, and a restarted proxier reads
// the kernel's chains first, so a restart with nothing changed restores nothing.
package proxier
