package etcdstore_test

import (
	"testing"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/apiserver/internal/storage/etcdstore/etcdtest"
	"minik8s.io/apiserver/internal/storage/storagetest"
)

// TestContract runs the suite on one embedded etcd: every case works under keys of its own.
func TestContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an embedded etcd; skipped under -short")
	}
	store := etcdtest.Start(t).Store
	storagetest.Run(t, func(*testing.T) storage.Interface { return store })
}
