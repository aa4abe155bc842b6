package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"minik8s.io/apiserver/internal/storage"
)

// defaultBatch bounds the events of one WatchResult, as etcd bounds a watch response.
const defaultBatch = 1000

// errEmptyKey is etcd's answer to a request without a key.
var errEmptyKey = errors.New("key is not provided")

// Store is an in-memory storage.Interface. The zero value is not usable; call New.
type Store struct {
	mu sync.Mutex
	// rev is the current revision; every successful write adds one.
	rev int64
	// compacted is the oldest revision still readable; 0 before the first Compact.
	compacted int64
	records   map[string]*record
	keys      *index // records in key order
	// log holds every change from the compacted revision on, one a revision, in order.
	log []storage.Event
	// changed is closed and replaced on every write, which wakes the watchers waiting on it.
	changed chan struct{}
	// batch is the most events a watcher takes from the log at once.
	batch int
}

// record is the retained history of one key.
type record struct {
	key string
	// versions are in revision order; the store never hands out their values, only copies.
	versions []version
}

// version is a key's state from its mod revision on: a value, or absent after a delete.
type version struct {
	kv      storage.KV
	deleted bool
}

var _ storage.Interface = (*Store)(nil)

// New returns an empty store at revision 1, where a new etcd starts.
func New() *Store {
	return &Store{rev: 1, records: map[string]*record{}, keys: newIndex(), changed: make(chan struct{}), batch: defaultBatch}
}

// at returns the key's value at revision rev, if it existed then.
func (r *record) at(rev int64) (storage.KV, bool) {
	i := sort.Search(len(r.versions), func(i int) bool { return r.versions[i].kv.ModRevision > rev }) - 1
	if i < 0 || r.versions[i].deleted {
		return storage.KV{}, false
	}
	return r.versions[i].kv, true
}

// latest returns the key's current value, if it exists. r may be nil.
func (r *record) latest() (storage.KV, bool) {
	if r == nil || len(r.versions) == 0 || r.versions[len(r.versions)-1].deleted {
		return storage.KV{}, false
	}
	return r.versions[len(r.versions)-1].kv, true
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KV, error) {
	if err := check(ctx, key); err != nil {
		return storage.KV{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.records[key].latest()
	if !ok {
		return storage.KV{}, storage.ErrKeyNotFound
	}
	return cloneKV(kv), nil
}

// List implements storage.Interface. Like etcd, it reads the range [from, end of prefix): a from
// before the prefix reads the keys in between too.
func (s *Store) List(ctx context.Context, prefix, from string, limit, rev int64) (storage.ListResult, error) {
	if from == "" {
		from = prefix
	}
	if err := check(ctx, from); err != nil {
		return storage.ListResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at, err := s.readable(rev)
	if err != nil {
		return storage.ListResult{}, err
	}
	end, bounded := rangeEnd(prefix)
	out := storage.ListResult{Revision: at}
	for n := s.keys.seek(from); n != nil && (!bounded || n.rec.key < end); n = n.next[0] {
		kv, ok := n.rec.at(at)
		if !ok {
			continue
		}
		if limit > 0 && int64(len(out.KVs)) == limit {
			out.More = true
			break
		}
		out.KVs = append(out.KVs, cloneKV(kv))
	}
	return out, nil
}

// readable returns the revision a read at rev (0: latest) sees, or why it cannot be read.
func (s *Store) readable(rev int64) (int64, error) {
	switch {
	case rev <= 0:
		return s.rev, nil
	case rev > s.rev:
		return 0, fmt.Errorf("revision %d is in the future: the store is at %d", rev, s.rev)
	case rev < s.compacted:
		return 0, fmt.Errorf("%w: revision %d, compacted at %d", storage.ErrCompacted, rev, s.compacted)
	}
	return rev, nil
}

// rangeEnd returns the first key after every key with the prefix, as etcd computes it: the
// prefix with its last byte below 0xff incremented and what follows dropped. A prefix of only
// 0xff bytes (or none) bounds nothing: bounded is false.
func rangeEnd(prefix string) (end string, bounded bool) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xff {
			return prefix[:i] + string([]byte{prefix[i] + 1}), true
		}
	}
	return "", false
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := check(ctx, key); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[key].latest(); ok {
		return 0, storage.ErrKeyExists
	}
	return s.put(key, value), nil
}

// Update implements storage.Interface. As in etcd's compare, an absent key's mod revision is 0:
// an update expecting 0 creates the key.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	if err := check(ctx, key); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.records[key].latest()
	if cur.ModRevision != expected {
		if !ok {
			return 0, storage.ErrKeyNotFound
		}
		return 0, storage.ErrRevisionMismatch
	}
	return s.put(key, value), nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (storage.KV, int64, error) {
	if err := check(ctx, key); err != nil {
		return storage.KV{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.records[key]
	cur, ok := rec.latest()
	if !ok {
		return storage.KV{}, 0, storage.ErrKeyNotFound
	}
	if expected > 0 && cur.ModRevision != expected {
		return storage.KV{}, 0, storage.ErrRevisionMismatch
	}
	s.rev++
	rec.versions = append(rec.versions, version{kv: storage.KV{Key: key, ModRevision: s.rev}, deleted: true})
	gone := cur
	gone.ModRevision = s.rev
	s.logChange(storage.Event{Type: storage.Delete, KV: gone, PrevKV: &cur, Revision: s.rev})
	return cloneKV(cur), s.rev, nil
}

// put writes key at the next revision and returns it.
func (s *Store) put(key string, value []byte) int64 {
	rec := s.records[key]
	if rec == nil {
		rec = &record{key: key}
		s.records[key] = rec
		s.keys.insert(rec)
	}
	s.rev++
	kv := storage.KV{Key: key, Value: clone(value), CreateRevision: s.rev, ModRevision: s.rev}
	ev := storage.Event{Type: storage.Put, Revision: s.rev, Created: true}
	if prev, ok := rec.latest(); ok {
		kv.CreateRevision = prev.CreateRevision
		ev.PrevKV, ev.Created = &prev, false
	}
	ev.KV = kv
	rec.versions = append(rec.versions, version{kv: kv})
	s.logChange(ev)
	return s.rev
}

// logChange logs a change and wakes the watchers.
func (s *Store) logChange(ev storage.Event) {
	s.log = append(s.log, ev)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Revision implements storage.Interface.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, nil
}

// Compact implements storage.Interface. As in etcd, rev itself stays readable, and compacting
// at or below an earlier compaction fails with ErrCompacted.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.compacted {
		return fmt.Errorf("%w: compact at %d, compacted at %d", storage.ErrCompacted, rev, s.compacted)
	}
	if rev > s.rev {
		return fmt.Errorf("compact at %d: revision is in the future: the store is at %d", rev, s.rev)
	}
	s.compacted = rev
	first := sort.Search(len(s.log), func(i int) bool { return s.log[i].Revision >= rev })
	s.log = slices.Clone(s.log[first:]) // a new array, so the dropped events can be freed
	for key, rec := range s.records {
		// Keep what a read at rev sees and what came after; a delete at or before rev leaves
		// nothing to see.
		i := sort.Search(len(rec.versions), func(i int) bool { return rec.versions[i].kv.ModRevision > rev }) - 1
		if i >= 0 && rec.versions[i].deleted {
			i++
		}
		if i <= 0 {
			continue
		}
		rec.versions = slices.Clone(rec.versions[i:])
		if len(rec.versions) == 0 {
			delete(s.records, key)
			s.keys.remove(key)
		}
	}
	return nil
}

// check fails a request whose ctx has ended or that names no key, as etcd would.
func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return errEmptyKey
	}
	return nil
}

// clone copies a value; an empty one comes back nil, as from etcd.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func cloneKV(kv storage.KV) storage.KV {
	kv.Value = clone(kv.Value)
	return kv
}
