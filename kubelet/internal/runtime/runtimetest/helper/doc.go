// Package helper is the test workload of the runtime contract suite: a tiny command language
// (print, sleep, exit, alloc, serve, dial, signal handling) interpreted against an OS
// interface, so the same script runs as a static binary in a Docker container and as a
// simulated process in the fake runtime.
package helper
