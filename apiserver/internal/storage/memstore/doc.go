// Package memstore is an in-memory storage.Interface with etcd's semantics, for unit tests of
// the apiserver that need no etcd: one revision counter for the whole store that every write
// moves by one, create and mod revisions per key, history kept until Compact so that lists and
// watches from past revisions work (and fail with storage.ErrCompacted below the compacted
// revision), plain byte prefixes, and watches delivered in revision order. It is held to the
// same contract suite (storagetest) as etcdstore.
//
// Where it is deliberately not etcd: a watcher that is still behind a revision when it is
// compacted ends with ErrCompacted (etcd keeps a caught-up watcher's pending events); and a
// watch starting exactly at the compacted revision gets those events whole, where etcd may have
// dropped a delete at that revision or the previous values (PrevKV) of its changes.
package memstore
