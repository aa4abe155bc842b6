package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"minik8s.io/apiserver/internal/storage"
)

// Deadline bounds every wait in the suite. It is generous on purpose: it only decides how long
// a broken store takes to fail.
const Deadline = 60 * time.Second

// Factory returns the store one case runs against; it registers its own cleanup with t. It is
// called once per case and may return a store shared between cases, provided nothing else
// writes to it while a case runs: each case works under keys of its own, and asserts
// revisions only relative to the ones it observed.
type Factory func(t *testing.T) storage.Interface

// Run runs the contract suite against the stores newStore returns.
func Run(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		run  func(t *testing.T, s storage.Interface, root string)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"RevisionIsGlobal", testRevisionIsGlobal},
		{"CanceledContext", testCanceledContext},
		{"ValuesAreNotAliased", testValuesAreNotAliased},
		{"ConcurrentWrites", testConcurrentWrites},
		{"ListPages", testListPages},
		{"ListAtPastRevision", testListAtPastRevision},
		{"ListPrefixIsPlain", testListPrefixIsPlain},
		{"ListAtCompactedRevision", testListAtCompactedRevision},
		{"ListAtFutureRevision", testListAtFutureRevision},
		{"Compact", testCompact},
		{"WatchFromRevision", testWatchFromRevision},
		{"WatchFromNow", testWatchFromNow},
		{"WatchFromFutureRevision", testWatchFromFutureRevision},
		{"WatchFromCompactedRevision", testWatchFromCompactedRevision},
		{"WatchEndsWithContext", testWatchEndsWithContext},
		{"WatchPrefixIsPlain", testWatchPrefixIsPlain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStore(t), "/storagetest/"+c.name+"/") })
	}
}

// equateEmpty makes a nil value equal an empty one: etcd returns no value as nil.
var equateEmpty = cmpopts.EquateEmpty()

func kv(key, value string, create, mod int64) storage.KV {
	return storage.KV{Key: key, Value: []byte(value), CreateRevision: create, ModRevision: mod}
}

func revision(t *testing.T, s storage.Interface) int64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	return rev
}

func create(t *testing.T, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(t.Context(), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%s): %v", key, err)
	}
	return rev
}

func update(t *testing.T, s storage.Interface, key, value string, expected int64) int64 {
	t.Helper()
	rev, err := s.Update(t.Context(), key, []byte(value), expected)
	if err != nil {
		t.Fatalf("Update(%s, expected %d): %v", key, expected, err)
	}
	return rev
}

func del(t *testing.T, s storage.Interface, key string) int64 {
	t.Helper()
	_, rev, err := s.Delete(t.Context(), key, 0)
	if err != nil {
		t.Fatalf("Delete(%s): %v", key, err)
	}
	return rev
}

func compact(t *testing.T, s storage.Interface, rev int64) {
	t.Helper()
	if err := s.Compact(t.Context(), rev); err != nil {
		t.Fatalf("Compact(%d): %v", rev, err)
	}
}

// state is what Get says of a key: its KV, or the error.
type state struct {
	KV  storage.KV
	Err string
}

func get(t *testing.T, s storage.Interface, key string) state {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if errors.Is(err, storage.ErrKeyNotFound) {
		return state{Err: storage.ErrKeyNotFound.Error()}
	}
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return state{KV: got}
}

func present(k storage.KV) state { return state{KV: k} }

var absent = state{Err: storage.ErrKeyNotFound.Error()}

// wantState fails t unless Get of key says want.
func wantState(t *testing.T, s storage.Interface, key string, want state) {
	t.Helper()
	if diff := cmp.Diff(want, get(t, s, key), equateEmpty); diff != "" {
		t.Errorf("Get(%s) (-want +got):\n%s", key, diff)
	}
}

// wantRevision fails t unless the store's revision is want.
func wantRevision(t *testing.T, s storage.Interface, want int64, after string) {
	t.Helper()
	if got := revision(t, s); got != want {
		t.Errorf("Revision after %s = %d, want %d", after, got, want)
	}
}

func list(t *testing.T, s storage.Interface, prefix, from string, limit, rev int64) storage.ListResult {
	t.Helper()
	res, err := s.List(t.Context(), prefix, from, limit, rev)
	if err != nil {
		t.Fatalf("List(%q, from %q, limit %d, at %d): %v", prefix, from, limit, rev, err)
	}
	return res
}
