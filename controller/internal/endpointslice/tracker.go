package endpointslice

import (
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// tracker remembers the controller's own slice writes until the cache shows them, so that a
// sync working from a cache that is behind does not create a slice twice or resurrect one it
// deleted (what ControllerExpectations and Kubernetes' EndpointSliceTracker are for).
type tracker struct {
	mu  sync.Mutex
	ttl time.Duration
	// by Service key, then slice name
	m map[string]map[string]expectation
}

type expectation struct {
	rv      uint64 // the revision written; 0 for a delete
	deleted bool
	at      time.Time
}

func newTracker(ttl time.Duration) *tracker {
	return &tracker{ttl: ttl, m: map[string]map[string]expectation{}}
}

func (t *tracker) wrote(svc string, s *discoveryv1.EndpointSlice, now time.Time) {
	rv, _ := strconv.ParseUint(s.ResourceVersion, 10, 64)
	t.put(svc, s.Name, expectation{rv: rv, at: now})
}

func (t *tracker) deleted(svc, name string, now time.Time) {
	t.put(svc, name, expectation{deleted: true, at: now})
}

func (t *tracker) put(svc, name string, e expectation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[svc] == nil {
		t.m[svc] = map[string]expectation{}
	}
	t.m[svc][name] = e
}

// forget drops what is remembered of a Service.
func (t *tracker) forget(svc string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, svc)
}

// behind reports whether cached (the Service's slices in the cache) misses one of the
// controller's writes; writes the cache shows, and ones older than the ttl (their event was
// lost; the relist repairs the cache), are forgotten.
func (t *tracker) behind(svc string, cached []*discoveryv1.EndpointSlice, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	exp := t.m[svc]
	if len(exp) == 0 {
		return false
	}
	byName := make(map[string]uint64, len(cached))
	for _, s := range cached {
		rv, _ := strconv.ParseUint(s.ResourceVersion, 10, 64)
		byName[s.Name] = rv
	}
	for name, e := range exp {
		rv, present := byName[name]
		seen := (e.deleted && !present) || (!e.deleted && present && rv >= e.rv)
		if seen || now.Sub(e.at) > t.ttl {
			delete(exp, name)
		}
	}
	if len(exp) == 0 {
		delete(t.m, svc)
		return false
	}
	return true
}
