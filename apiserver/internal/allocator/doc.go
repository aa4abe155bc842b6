// Package allocator hands out the addresses the apiserver assigns: Service cluster IPs and node
// ports, and each Node's pod CIDR. Every allocation is a key in the store created only if
// absent, so several apiservers never hand out the same address.
package allocator
