package counters

import (
	"context"
	"sync"
	"time"
)

// Store keeps the buckets and last call times of every gateway, summed.
type Store interface {
	// Add adds a batch's buckets to the stored ones (a second recorded by two gateways holds
	// both's calls) and raises last call times (never lowers them).
	Add(ctx context.Context, b Batch) error
	// Buckets returns fn's buckets for the seconds from..to inclusive that hold calls, oldest
	// first; seconds nobody recorded are left out.
	Buckets(ctx context.Context, fn string, from, to int64) ([]Bucket, error)
	// LastCalls returns the last call time of each function in fns that has one.
	LastCalls(ctx context.Context, fns []string) (map[string]time.Time, error)
	// Forget drops what the store keeps about fn beyond its buckets' own expiry (its last call).
	Forget(ctx context.Context, fn string) error
}

// Memory is a Store in memory, for tests and for a single gateway with no Redis.
type Memory struct {
	mu       sync.Mutex
	buckets  map[string]map[int64]Bucket
	lastCall map[string]time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{buckets: map[string]map[int64]Bucket{}, lastCall: map[string]time.Time{}}
}

func (m *Memory) Add(_ context.Context, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for fn, bs := range b.Buckets {
		secs := m.buckets[fn]
		if secs == nil {
			secs = map[int64]Bucket{}
			m.buckets[fn] = secs
		}
		for _, bk := range bs {
			cur := secs[bk.Second]
			cur.Second = bk.Second
			cur.Started += bk.Started
			cur.Concurrency += bk.Concurrency
			secs[bk.Second] = cur
		}
	}
	for fn, t := range b.LastCalls {
		if t.After(m.lastCall[fn]) {
			m.lastCall[fn] = t
		}
	}
	return nil
}

func (m *Memory) Buckets(_ context.Context, fn string, from, to int64) ([]Bucket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Bucket
	for sec := from; sec <= to; sec++ {
		if bk, ok := m.buckets[fn][sec]; ok {
			out = append(out, bk)
		}
	}
	return out, nil
}

func (m *Memory) LastCalls(_ context.Context, fns []string) (map[string]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]time.Time{}
	for _, fn := range fns {
		if t, ok := m.lastCall[fn]; ok {
			out[fn] = t
		}
	}
	return out, nil
}

func (m *Memory) Forget(_ context.Context, fn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.lastCall, fn)
	delete(m.buckets, fn)
	return nil
}
