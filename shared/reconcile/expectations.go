package reconcile

import (
	"sync"
	"time"
)

// Expectations remember, per owner key, the creations and deletions a controller has made
// and its cache has not shown yet. While any is outstanding the owner's sync must not act on
// the cache's count of children: it would create or delete the same ones again. An entry older
// than TTL counts as satisfied (a watch event was lost; the relist repaired the cache).
type Expectations struct {
	TTL time.Duration

	mu sync.Mutex
	m  map[string]*expectation
}

type expectation struct {
	adds int
	// dels are the children (namespace/name) whose deletion is not in the cache yet: a
	// child seen terminating and then gone is counted once.
	dels map[string]bool
	at   time.Time
}

func (e *Expectations) entryLocked(key string, now time.Time) *expectation {
	if e.m == nil {
		e.m = map[string]*expectation{}
	}
	x, ok := e.m[key]
	if !ok {
		x = &expectation{dels: map[string]bool{}}
		e.m[key] = x
	}
	x.at = now
	return x
}

// ExpectCreations records that n children of key are being created.
func (e *Expectations) ExpectCreations(key string, n int, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entryLocked(key, now).adds += n
}

// ExpectDeletions records that the children named by childKeys are being deleted.
func (e *Expectations) ExpectDeletions(key string, childKeys []string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.entryLocked(key, now)
	for _, c := range childKeys {
		x.dels[c] = true
	}
}

// CreationObserved lowers key's outstanding creations by one: a child appeared in the cache,
// or its creation failed or was never attempted.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved drops childKey from key's outstanding deletions: the cache shows it
// terminating or gone, or its deletion failed.
func (e *Expectations) DeletionObserved(key, childKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.dels, childKey)
	}
}

// Satisfied reports whether key has nothing outstanding (or its record expired), so its
// sync may trust the cache's children.
func (e *Expectations) Satisfied(key string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && len(x.dels) == 0) {
		return true
	}
	ttl := e.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	return now.Sub(x.at) > ttl
}

// Pending reports key's outstanding creations and deletions.
func (e *Expectations) Pending(key string) (adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		return x.adds, len(x.dels)
	}
	return 0, 0
}

// Forget drops key's record: the owner is gone, or its expectations are to be set afresh.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
