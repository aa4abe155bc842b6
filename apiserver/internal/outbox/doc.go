// Package outbox turns every change stored under /registry/ in etcd into a bus
// message, without a dual write: it tails the etcd watch from the last revision
// it published (kept in etcd), publishes with broker confirms, and only then
// advances that revision. One apiserver publishes at a time, elected in etcd.
package outbox
