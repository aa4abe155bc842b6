// Package etcdstore implements storage.Interface on etcd, and runs an embedded etcd server when
// no external cluster is given.
package etcdstore
