// Package cluster builds the real apiserver binary and runs it as a child
// process on free ports with a throwaway state directory, so benchmarks
// measure exactly what users run (TLS, tokens, embedded etcd, outbox).
package cluster
