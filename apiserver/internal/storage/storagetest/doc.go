// Package storagetest is the contract every storage.Interface keeps, written down as etcd
// behaves: Run checks guarded writes and their errors, one revision counter that every write
// moves by one, paged lists at past and compacted revisions, watches from past, present,
// future and compacted revisions, plain byte prefixes and unaliased values, against any store
// a factory builds. The in-memory store of unit tests (memstore) and the etcd adapter
// (etcdstore, on an embedded etcd) both run it.
package storagetest
