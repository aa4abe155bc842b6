package memstore_test

import (
	"testing"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/apiserver/internal/storage/memstore"
	"minik8s.io/apiserver/internal/storage/storagetest"
)

func TestContract(t *testing.T) {
	storagetest.Run(t, func(*testing.T) storage.Interface { return memstore.New() })
}
