// Package app assembles the apiserver: state directory, etcd (embedded or external), the HTTP
// API over TLS, the outbox publisher and the compactor, run together until the context ends.
package app
