// Package storage is the apiserver's seam to its key-value store: versioned keys with
// compare-and-swap writes and a watch from any retained revision. etcdstore implements it on
// etcd, memstore in memory for unit tests, and storagetest is the contract both keep.
package storage
