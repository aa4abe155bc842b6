package storagetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/apiserver/internal/storage"
)

func testCreateAndGet(t *testing.T, s storage.Interface, root string) {
	key := root + "a"
	wantState(t, s, key, absent)
	before := revision(t, s)
	rev := create(t, s, key, "one")
	if rev != before+1 {
		t.Errorf("Create returned revision %d, want %d: one more than the store's", rev, before+1)
	}
	wantState(t, s, key, present(kv(key, "one", rev, rev)))
	wantRevision(t, s, rev, "a create")

	if _, err := s.Create(t.Context(), key, []byte("two")); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("Create of an existing key: %v, want ErrKeyExists", err)
	}
	wantState(t, s, key, present(kv(key, "one", rev, rev)))
	wantRevision(t, s, rev, "a failed create")

	// A deleted key can be created again, as a new key: its create revision starts over.
	del(t, s, key)
	again := create(t, s, key, "three")
	wantState(t, s, key, present(kv(key, "three", again, again)))
}

// setup prepares a key for a guarded write and returns the mod revision the write expects.
type setup func(t *testing.T, s storage.Interface, key string) int64

func freshKey(t *testing.T, s storage.Interface, key string) int64 { return create(t, s, key, "old") }

func updatedKey(t *testing.T, s storage.Interface, key string) int64 {
	return update(t, s, key, "newer", create(t, s, key, "old"))
}

// staleRevision returns the key's mod revision before its last update.
func staleRevision(t *testing.T, s storage.Interface, key string) int64 {
	rev := create(t, s, key, "old")
	update(t, s, key, "newer", rev)
	return rev
}

// deletedKey returns the key's last mod revision before its delete.
func deletedKey(t *testing.T, s storage.Interface, key string) int64 {
	rev := create(t, s, key, "old")
	del(t, s, key)
	return rev
}

func absentKey(*testing.T, storage.Interface, string) int64 { return 0 }

// storeRevision leaves the key absent and returns the store's revision, a plausible mod one.
func storeRevision(t *testing.T, s storage.Interface, _ string) int64 { return revision(t, s) }

// expectingZero prepares the key as prepare does but expects mod revision 0.
func expectingZero(prepare setup) setup {
	return func(t *testing.T, s storage.Interface, key string) int64 {
		prepare(t, s, key)
		return 0
	}
}

func testUpdate(t *testing.T, s storage.Interface, root string) {
	cases := []struct {
		name    string
		setup   setup
		wantErr error
	}{
		{"ExpectedModRevision", freshKey, nil},
		{"ModRevisionOfAnUpdate", updatedKey, nil},
		{"StaleModRevision", staleRevision, storage.ErrRevisionMismatch},
		{"LaterModRevision", func(t *testing.T, s storage.Interface, key string) int64 { return freshKey(t, s, key) + 1 },
			storage.ErrRevisionMismatch},
		{"AbsentKey", storeRevision, storage.ErrKeyNotFound},
		{"DeletedKey", deletedKey, storage.ErrKeyNotFound},
		// etcd compares an absent key's mod revision as 0, so expecting 0 creates it.
		{"AbsentKeyExpectingZero", absentKey, nil},
		{"ExistingKeyExpectingZero", expectingZero(freshKey), storage.ErrRevisionMismatch},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := root + strconv.Itoa(i)
			expected := c.setup(t, s, key)
			prev, rev, ok := tryWrite(t, s, key, c.wantErr, fmt.Sprintf("Update(expected %d)", expected), func() (int64, error) {
				return s.Update(t.Context(), key, []byte("new"), expected)
			})
			if !ok {
				return
			}
			created := rev
			if prev.Err == "" {
				created = prev.KV.CreateRevision
			}
			wantState(t, s, key, present(kv(key, "new", created, rev)))
			wantRevision(t, s, rev, "an update")
		})
	}
}

func testDelete(t *testing.T, s storage.Interface, root string) {
	cases := []struct {
		name    string
		setup   setup // 0: any mod revision
		wantErr error
	}{
		{"AnyModRevision", expectingZero(updatedKey), nil},
		{"ExpectedModRevision", freshKey, nil},
		{"ModRevisionOfAnUpdate", updatedKey, nil},
		{"StaleModRevision", staleRevision, storage.ErrRevisionMismatch},
		{"AbsentKey", absentKey, storage.ErrKeyNotFound},
		{"AbsentKeyWithModRevision", storeRevision, storage.ErrKeyNotFound},
		{"DeletedKey", expectingZero(deletedKey), storage.ErrKeyNotFound},
		{"DeletedKeyWithItsModRevision", deletedKey, storage.ErrKeyNotFound},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := root + strconv.Itoa(i)
			expected := c.setup(t, s, key)
			var gone storage.KV
			prev, rev, ok := tryWrite(t, s, key, c.wantErr, fmt.Sprintf("Delete(expected %d)", expected), func() (rev int64, err error) {
				gone, rev, err = s.Delete(t.Context(), key, expected)
				return rev, err
			})
			if !ok {
				return
			}
			if diff := cmp.Diff(prev.KV, gone, equateEmpty); diff != "" {
				t.Errorf("Delete returned a value other than the last one (-want +got):\n%s", diff)
			}
			wantState(t, s, key, absent)
			wantRevision(t, s, rev, "a delete")
		})
	}
}

// tryWrite runs a guarded write of key and checks what every one must do: fail with wantErr,
// and then change neither the key nor the revision; or succeed at the next revision. It
// returns what Get said of the key before, the write's revision, and whether it succeeded.
func tryWrite(t *testing.T, s storage.Interface, key string, wantErr error, what string, write func() (int64, error)) (prev state, rev int64, ok bool) {
	t.Helper()
	before, prev := revision(t, s), get(t, s, key)
	rev, err := write()
	if !errors.Is(err, wantErr) {
		t.Fatalf("%s = %d, %v; want error %v", what, rev, err, wantErr)
	}
	if err != nil {
		wantState(t, s, key, prev)
		wantRevision(t, s, before, "a failed write")
		return prev, 0, false
	}
	if rev != before+1 {
		t.Errorf("%s returned revision %d, want %d", what, rev, before+1)
	}
	return prev, rev, true
}

func testRevisionIsGlobal(t *testing.T, s storage.Interface, root string) {
	a, b := root+"a", root+"b"
	before := revision(t, s)
	got := []int64{create(t, s, a, "1"), create(t, s, b, "1"), update(t, s, a, "2", before+1), del(t, s, b), create(t, s, b, "2")}
	want := []int64{before + 1, before + 2, before + 3, before + 4, before + 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("revisions of writes to two keys (-want +got):\n%s", diff)
	}
	get(t, s, a)
	list(t, s, root, "", 0, 0)
	list(t, s, root, "", 1, before+2)
	wantRevision(t, s, before+5, "reads")
}

func testCanceledContext(t *testing.T, s storage.Interface, root string) {
	key, absentKey := root+"a", root+"b"
	rev := create(t, s, key, "one")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, key); return err }},
		{"List", func() error { _, err := s.List(ctx, root, "", 0, 0); return err }},
		{"Create", func() error { _, err := s.Create(ctx, absentKey, []byte("x")); return err }},
		{"Update", func() error { _, err := s.Update(ctx, key, []byte("x"), rev); return err }},
		{"Delete", func() error { _, _, err := s.Delete(ctx, key, rev); return err }},
		{"Revision", func() error { _, err := s.Revision(ctx); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a canceled context: %v, want context.Canceled", c.name, err)
			}
		})
	}
	wantState(t, s, key, present(kv(key, "one", rev, rev)))
	wantState(t, s, absentKey, absent)
	wantRevision(t, s, rev, "canceled writes")
}

func testValuesAreNotAliased(t *testing.T, s storage.Interface, root string) {
	ctx, key := t.Context(), root+"a"
	before := revision(t, s)
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'X'
		}
	}

	in := []byte("one")
	r1, err := s.Create(ctx, key, in)
	if err != nil {
		t.Fatal(err)
	}
	scribble(in)
	wantState(t, s, key, present(kv(key, "one", r1, r1)))
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	scribble(got.Value)
	wantState(t, s, key, present(kv(key, "one", r1, r1)))

	in = []byte("two")
	r2, err := s.Update(ctx, key, in, r1)
	if err != nil {
		t.Fatal(err)
	}
	scribble(in)
	wantState(t, s, key, present(kv(key, "two", r1, r2)))
	scribble(list(t, s, root, "", 0, 0).KVs[0].Value)
	scribble(list(t, s, root, "", 0, r1).KVs[0].Value)
	wantState(t, s, key, present(kv(key, "two", r1, r2)))
	if diff := cmp.Diff([]storage.KV{kv(key, "one", r1, r1)}, list(t, s, root, "", 0, r1).KVs, equateEmpty); diff != "" {
		t.Errorf("List at %d after changing an earlier list's values (-want +got):\n%s", r1, diff)
	}

	// Two watches of the same changes: what one does to its events shows neither in the
	// other's nor in the store.
	w1, w2 := s.Watch(ctx, root, before), s.Watch(ctx, root, before)
	for _, ev := range collect(t, w1, 2) {
		scribble(ev.KV.Value)
		if ev.PrevKV != nil {
			scribble(ev.PrevKV.Value)
		}
	}
	first := kv(key, "one", r1, r1)
	want := []storage.Event{
		{Type: storage.Put, KV: first, Revision: r1, Created: true},
		{Type: storage.Put, KV: kv(key, "two", r1, r2), PrevKV: &first, Revision: r2},
	}
	if diff := cmp.Diff(want, collect(t, w2, 2), equateEmpty); diff != "" {
		t.Errorf("events of a watch after another changed its own (-want +got):\n%s", diff)
	}
	gone, _, err := s.Delete(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	scribble(gone.Value)
	if diff := cmp.Diff([]storage.KV{kv(key, "two", r1, r2)}, list(t, s, root, "", 0, r2).KVs, equateEmpty); diff != "" {
		t.Errorf("List at %d after changing what Delete returned (-want +got):\n%s", r2, diff)
	}
}

// testConcurrentWrites has writers race on their own keys, with reads alongside: every write
// gets its own revision, with none left out, and a watch sees them all in revision order.
func testConcurrentWrites(t *testing.T, s storage.Interface, root string) {
	const writers, writes = 8, 25
	ctx := t.Context()
	before := revision(t, s)
	var mu sync.Mutex
	done := map[int64]string{} // revision: "key=value"
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			key := fmt.Sprintf("%sw%d", root, w)
			var mod int64
			for i := range writes {
				value := strconv.Itoa(i)
				rev, err := s.Update(ctx, key, []byte(value), mod) // the first, expecting 0, creates
				if err != nil {
					t.Errorf("write %d of %s: %v", i, key, err)
					return
				}
				mod = rev
				mu.Lock()
				if other, dup := done[rev]; dup {
					t.Errorf("revision %d given to %s=%s and to %s", rev, key, value, other)
				}
				done[rev] = key + "=" + value
				mu.Unlock()
				if _, err := s.List(ctx, root, "", 0, 0); err != nil {
					t.Errorf("List alongside writes: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	const n = writers * writes
	revs := slices.Sorted(maps.Keys(done))
	if revs[0] != before+1 || revs[n-1] != before+n {
		t.Errorf("%d writes got revisions %d to %d, want %d to %d", n, revs[0], revs[n-1], before+1, before+n)
	}
	wantRevision(t, s, before+n, "the writes")

	var want, got []string
	for _, r := range revs {
		want = append(want, fmt.Sprintf("%d %s", r, done[r]))
	}
	for _, ev := range collect(t, s.Watch(ctx, root, before), n) {
		got = append(got, fmt.Sprintf("%d %s=%s", ev.Revision, ev.KV.Key, ev.KV.Value))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch of concurrent writes (-want +got):\n%s", diff)
	}
}
