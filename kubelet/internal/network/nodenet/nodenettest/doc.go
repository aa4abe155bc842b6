// Package nodenettest is the contract every nodenet.Kernel and nodenet.IPTables keeps: one
// suite each, run against the in-memory fakes in unit tests and against netlink and iptables
// in a scratch network namespace in integration tests, so what the reconciler's unit tests
// assume of the fakes is what the kernel does.
package nodenettest
