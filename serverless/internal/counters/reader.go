package counters

import (
	"context"
	"sync"
	"time"
)

// Reader reads windows of buckets for the autoscaler. Seconds old enough that no gateway
// still writes them are cached, so a decision every few seconds over a long window reads only
// the last few seconds from the store.
type Reader struct {
	store Store
	// settle is how many of a window's newest seconds are read again next time: a gateway
	// writes a second's bucket up to one flush interval after it ended.
	settle int64

	mu    sync.Mutex
	cache map[string]*window
}

type window struct {
	start   int64 // the first second the cache covers
	final   int64 // seconds from start up to here are cached for good
	buckets map[int64]Bucket
}

// NewReader returns a reader of store. It does no I/O.
func NewReader(store Store) *Reader {
	return &Reader{store: store, settle: 3, cache: map[string]*window{}}
}

// Window returns fn's buckets for the seconds from..to inclusive that hold calls, oldest
// first.
func (r *Reader) Window(ctx context.Context, fn string, from, to int64) ([]Bucket, error) {
	r.mu.Lock()
	w := r.cache[fn]
	if w == nil || from < w.start {
		// New, or the window grew backwards: read it whole.
		w = &window{start: from, final: from - 1, buckets: map[int64]Bucket{}}
		r.cache[fn] = w
	}
	readFrom := max(from, w.final+1)
	r.mu.Unlock()

	var fresh []Bucket
	if readFrom <= to {
		var err error
		if fresh, err = r.store.Buckets(ctx, fn, readFrom, to); err != nil {
			return nil, err
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for sec := range w.buckets {
		if sec < from || sec >= readFrom {
			delete(w.buckets, sec)
		}
	}
	for _, b := range fresh {
		w.buckets[b.Second] = b
	}
	w.start = max(w.start, from)
	w.final = max(w.final, to-r.settle)
	out := make([]Bucket, 0, len(w.buckets))
	for sec := from; sec <= to; sec++ {
		if b, ok := w.buckets[sec]; ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// LastCalls returns the last call time of each function in fns that has one.
func (r *Reader) LastCalls(ctx context.Context, fns []string) (map[string]time.Time, error) {
	return r.store.LastCalls(ctx, fns)
}

// Forget drops what is kept about fn (deleted): its cached window and its last call.
func (r *Reader) Forget(ctx context.Context, fn string) error {
	r.mu.Lock()
	delete(r.cache, fn)
	r.mu.Unlock()
	return r.store.Forget(ctx, fn)
}
