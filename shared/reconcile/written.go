package reconcile

import (
	"strconv"
	"sync"
	"time"
)

// Written remembers, per key, the resourceVersion of an object the controller wrote, until its
// cache holds that version: a sync that reads the older object would compute the same write
// again and fail on Conflict (or, for a create, on AlreadyExists). Entries older than TTL are
// dropped (the event was lost; the relist repairs the cache).
type Written struct {
	TTL time.Duration

	mu sync.Mutex
	m  map[string]writtenAt
}

type writtenAt struct {
	rv uint64
	at time.Time
}

// Wrote records that key's object is now at resourceVersion rv.
func (w *Written) Wrote(key, rv string, now time.Time) {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]writtenAt{}
	}
	w.m[key] = writtenAt{rv: v, at: now}
}

// Behind reports whether the cached object of key (cachedRV, "" when the cache has none) is
// older than the controller's last write of it.
func (w *Written) Behind(key, cachedRV string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		return false
	}
	ttl := w.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	cached, err := strconv.ParseUint(cachedRV, 10, 64)
	if (err == nil && cached >= e.rv) || now.Sub(e.at) > ttl {
		delete(w.m, key)
		return false
	}
	return true
}

// Forget drops key.
func (w *Written) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
