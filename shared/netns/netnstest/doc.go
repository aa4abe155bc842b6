// Package netnstest makes throwaway network namespaces for tests and benchmarks that need the
// kernel's links, routes, iptables and sockets without touching the machine's.
package netnstest
