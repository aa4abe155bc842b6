package informer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// NamespaceIndex is the index every Store has: objects by metadata.namespace.
const NamespaceIndex = "namespace"

// IndexFunc returns the index values an object is filed under (none is fine).
type IndexFunc func(obj runtime.Object) ([]string, error)

// Indexers names index functions.
type Indexers map[string]IndexFunc

// NamespaceIndexFunc files an object under its namespace.
func NamespaceIndexFunc(obj runtime.Object) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("namespace index: %w", err)
	}
	return []string{m.GetNamespace()}, nil
}

// KeyOf is the store key of obj: "namespace/name", or "name" for cluster-scoped objects.
// Tombstones yield the key of the object they stand for.
func KeyOf(obj runtime.Object) (string, error) {
	if t, ok := obj.(*Tombstone); ok {
		return t.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("object key: %w", err)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName(), nil
	}
	return m.GetName(), nil
}

// SplitKey is the inverse of KeyOf.
func SplitKey(key string) (namespace, name string) {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// Tombstone stands in for an object whose deletion was not seen as an event: it was in the
// store and is missing from a relist. Obj is the last state the store held.
type Tombstone struct {
	Key string
	Obj runtime.Object
}

func (t *Tombstone) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (t *Tombstone) DeepCopyObject() runtime.Object {
	c := &Tombstone{Key: t.Key}
	if t.Obj != nil {
		c.Obj = t.Obj.DeepCopyObject()
	}
	return c
}

// DeletedObject unwraps a Tombstone; any other object is returned as is.
func DeletedObject(obj runtime.Object) runtime.Object {
	if t, ok := obj.(*Tombstone); ok {
		return t.Obj
	}
	return obj
}

// DeltaType says what a change did to the store.
type DeltaType string

const (
	Added   DeltaType = "Added"
	Updated DeltaType = "Updated"
	Deleted DeltaType = "Deleted"
	// Sync is a periodic resync of an unchanged object (Old == New).
	Sync DeltaType = "Sync"
)

// Delta is one change made to a Store. For Deleted, New is nil and Old is the deleted object
// (a *Tombstone when the deletion was inferred from a relist).
type Delta struct {
	Type     DeltaType
	Old, New runtime.Object
}

// Store is a thread-safe, indexed map of objects keyed by KeyOf. Objects it returns are
// shared with other readers: deep-copy before mutating.
//
// It orders writes by resourceVersion (the etcd revision): an event older than what the store
// already knows for that key, or older than the last full list, is dropped. Deleted keys are
// remembered until a newer list makes that unnecessary, so a late "added" for a deleted object
// cannot bring it back.
type Store struct {
	mu       sync.RWMutex
	items    map[string]runtime.Object
	seen     map[string]uint64 // newest revision applied per key, live or deleted
	floor    uint64            // revision of the newest full list
	indexers Indexers
	indices  map[string]map[string]map[string]struct{} // index -> value -> keys
}

// NewStore returns an empty store with the namespace index and indexers.
func NewStore(indexers Indexers) *Store {
	s := &Store{
		items:    map[string]runtime.Object{},
		seen:     map[string]uint64{},
		indexers: Indexers{NamespaceIndex: NamespaceIndexFunc},
		indices:  map[string]map[string]map[string]struct{}{},
	}
	for name, f := range indexers {
		s.indexers[name] = f
	}
	return s
}

// AddIndexers adds indexes, filing the objects already stored.
func (s *Store) AddIndexers(indexers Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range indexers {
		if _, ok := s.indexers[name]; ok {
			return fmt.Errorf("index %q already exists", name)
		}
	}
	for name, f := range indexers {
		s.indexers[name] = f
		for key, obj := range s.items {
			if err := s.indexOneLocked(name, f, key, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// Get returns the object stored under key ("namespace/name" or "name").
func (s *Store) Get(key string) (runtime.Object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[key]
	return obj, ok
}

// List returns every stored object, in no particular order.
func (s *Store) List() []runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]runtime.Object, 0, len(s.items))
	for _, obj := range s.items {
		out = append(out, obj)
	}
	return out
}

// ListKeys returns every key, sorted.
func (s *Store) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.items))
	for k := range s.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Len is the number of stored objects.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// ByIndex returns the objects filed under value in the named index.
func (s *Store) ByIndex(index, value string) ([]runtime.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.indexers[index]; !ok {
		return nil, fmt.Errorf("index %q does not exist", index)
	}
	keys := s.indices[index][value]
	out := make([]runtime.Object, 0, len(keys))
	for k := range keys {
		out = append(out, s.items[k])
	}
	return out, nil
}

// IndexKeys returns the sorted keys filed under value in the named index.
func (s *Store) IndexKeys(index, value string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.indexers[index]; !ok {
		return nil, fmt.Errorf("index %q does not exist", index)
	}
	keys := make([]string, 0, len(s.indices[index][value]))
	for k := range s.indices[index][value] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}

// Apply applies one watch or bus event. It reports whether the store changed; a stale event
// (older than the store's state for that key) changes nothing and is not an error.
func (s *Store) Apply(eventType watch.EventType, obj runtime.Object) (Delta, bool, error) {
	key, err := KeyOf(obj)
	if err != nil {
		return Delta{}, false, err
	}
	rv, err := revision(obj)
	if err != nil {
		return Delta{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	seen, known := s.seen[key]
	// Revision 0 means "unknown" (hand-built objects in tests, odd servers): such events
	// cannot be ordered, so they are applied as they come.
	if rv != 0 && rv <= s.floor {
		return Delta{}, false, nil
	}
	old, exists := s.items[key]
	switch eventType {
	case watch.Added, watch.Modified:
		if rv != 0 && known && rv <= seen {
			return Delta{}, false, nil
		}
		if err := s.putLocked(key, obj, old, exists); err != nil {
			return Delta{}, false, err
		}
		s.seen[key] = rv
		if exists {
			return Delta{Type: Updated, Old: old, New: obj}, true, nil
		}
		return Delta{Type: Added, New: obj}, true, nil
	case watch.Deleted:
		// A delete carries the revision of the deletion, which may equal the last write's
		// on servers that echo the final state.
		if rv != 0 && known && rv < seen {
			return Delta{}, false, nil
		}
		s.seen[key] = max(rv, seen)
		if !exists {
			return Delta{}, false, nil
		}
		s.deleteLocked(key, old)
		return Delta{Type: Deleted, Old: obj}, true, nil
	default:
		return Delta{}, false, fmt.Errorf("apply %s event for %s: unsupported event type", eventType, key)
	}
}

// Replace makes the store match a full list taken at listRV and returns the changes in order:
// adds and updates in list order, then deletes (as Tombstones) by key. Keys the store knows at
// a revision newer than the list are left alone: the list is older than what they say.
func (s *Store) Replace(objs []runtime.Object, listRV string) ([]Delta, error) {
	lrv, err := parseRevision(listRV)
	if err != nil {
		return nil, fmt.Errorf("list resourceVersion: %w", err)
	}
	type entry struct {
		key string
		rv  uint64
		obj runtime.Object
	}
	entries := make([]entry, 0, len(objs))
	for _, obj := range objs {
		key, err := KeyOf(obj)
		if err != nil {
			return nil, err
		}
		rv, err := revision(obj)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{key, rv, obj})
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var deltas []Delta
	listed := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		listed[e.key] = struct{}{}
		seen, known := s.seen[e.key]
		old, exists := s.items[e.key]
		if e.rv != 0 && known && e.rv < seen {
			continue
		}
		if exists && e.rv != 0 && e.rv == seen {
			continue // unchanged
		}
		if err := s.putLocked(e.key, e.obj, old, exists); err != nil {
			return deltas, err
		}
		s.seen[e.key] = e.rv
		if exists {
			deltas = append(deltas, Delta{Type: Updated, Old: old, New: e.obj})
		} else {
			deltas = append(deltas, Delta{Type: Added, New: e.obj})
		}
	}
	var gone []string
	for key := range s.items {
		if _, ok := listed[key]; ok {
			continue
		}
		if lrv != 0 && s.seen[key] > lrv {
			continue // created after the list was taken
		}
		gone = append(gone, key)
	}
	sort.Strings(gone)
	for _, key := range gone {
		old := s.items[key]
		s.deleteLocked(key, old)
		s.seen[key] = max(s.seen[key], lrv)
		deltas = append(deltas, Delta{Type: Deleted, Old: &Tombstone{Key: key, Obj: old}})
	}
	if lrv > s.floor {
		s.floor = lrv
	}
	// Forget deletions the list already covers: the floor now rejects anything they would.
	for key, rv := range s.seen {
		if _, live := s.items[key]; !live && rv <= s.floor {
			delete(s.seen, key)
		}
	}
	return deltas, nil
}

func (s *Store) putLocked(key string, obj, old runtime.Object, exists bool) error {
	// Compute new index values before touching anything so a failing IndexFunc leaves the
	// store as it was.
	values := make(map[string][]string, len(s.indexers))
	for name, f := range s.indexers {
		v, err := f(obj)
		if err != nil {
			return fmt.Errorf("index %q of %s: %w", name, key, err)
		}
		values[name] = v
	}
	if exists {
		s.unindexLocked(key, old)
	}
	s.items[key] = obj
	for name, vs := range values {
		s.fileLocked(name, key, vs)
	}
	return nil
}

func (s *Store) deleteLocked(key string, old runtime.Object) {
	s.unindexLocked(key, old)
	delete(s.items, key)
}

func (s *Store) indexOneLocked(name string, f IndexFunc, key string, obj runtime.Object) error {
	vs, err := f(obj)
	if err != nil {
		return fmt.Errorf("index %q of %s: %w", name, key, err)
	}
	s.fileLocked(name, key, vs)
	return nil
}

func (s *Store) fileLocked(name, key string, values []string) {
	idx := s.indices[name]
	if idx == nil {
		idx = map[string]map[string]struct{}{}
		s.indices[name] = idx
	}
	for _, v := range values {
		set := idx[v]
		if set == nil {
			set = map[string]struct{}{}
			idx[v] = set
		}
		set[key] = struct{}{}
	}
}

// unindexLocked removes key from every index by scanning the values old was filed under;
// IndexFuncs are pure, so recomputing them on old gives the same values.
func (s *Store) unindexLocked(key string, old runtime.Object) {
	for name, f := range s.indexers {
		vs, err := f(old)
		if err != nil {
			continue // it could not have been filed either
		}
		idx := s.indices[name]
		for _, v := range vs {
			delete(idx[v], key)
			if len(idx[v]) == 0 {
				delete(idx, v)
			}
		}
	}
}

func revision(obj runtime.Object) (uint64, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, fmt.Errorf("object revision: %w", err)
	}
	rv, err := parseRevision(m.GetResourceVersion())
	if err != nil {
		return 0, fmt.Errorf("object %s/%s: %w", m.GetNamespace(), m.GetName(), err)
	}
	return rv, nil
}

func parseRevision(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resourceVersion %q is not a revision: %w", s, err)
	}
	return rv, nil
}
