// Package fake is an in-memory network.Network for unit tests: it hands out addresses from a
// CIDR the way host-local does, records every call, and fails on demand.
package fake
