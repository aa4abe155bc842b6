// Package netnstest makes throwaway network namespaces for tests and benchmarks that need the
// kernel's iptables, links and sockets without touching the machine's.
package netnstest
