package backoff

import (
	"strings"
	"sync"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// Kubernetes' container restart back-off.
const (
	DefaultInitial    = 10 * time.Second
	DefaultMax        = 300 * time.Second
	DefaultResetAfter = 10 * time.Minute
)

// BackOff tracks delays by key. Safe for concurrent use.
type BackOff struct {
	clock      clock.Clock
	initial    time.Duration
	max        time.Duration
	resetAfter time.Duration

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	delay   time.Duration
	updated time.Time
}

// New returns a back-off with the container restart defaults.
func New(c clock.Clock) *BackOff {
	return NewWith(c, DefaultInitial, DefaultMax, DefaultResetAfter)
}

// NewWith returns a back-off whose delay starts at initial and doubles up to max; a key
// that ran resetAfter, or was left alone resetAfter+max, starts over.
func NewWith(c clock.Clock, initial, max, resetAfter time.Duration) *BackOff {
	return &BackOff{clock: c, initial: initial, max: max, resetAfter: resetAfter, entries: map[string]*entry{}}
}

// Key names one item of an owner (a container of a pod, a node of a DaemonSet): Forget(owner)
// drops them all.
func Key(owner, item string) string { return owner + "/" + item }

// Remaining is how long a container that finished at finishedAt must still wait before its
// next restart; zero means it may restart now.
func (b *BackOff) Remaining(key string, finishedAt time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return 0
	}
	left := e.delay - b.clock.Now().Sub(finishedAt)
	if left < 0 {
		return 0
	}
	return left
}

// SinceNext is how long key must still wait counted from its last Next; zero means it may
// go now.
func (b *BackOff) SinceNext(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return 0
	}
	return max(e.delay-b.clock.Now().Sub(e.updated), 0)
}

// Delay is the current delay for key: the one a waiting container shows in its message.
func (b *BackOff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// Next records a restart of a container that ran for ran and lengthens the delay before the
// one after it. A container that ran at least resetAfter was healthy: its back-off starts over.
func (b *BackOff) Next(key string, ran time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e, ok := b.entries[key]
	if !ok || ran >= b.resetAfter || now.Sub(e.updated) >= b.resetAfter+b.max {
		b.entries[key] = &entry{delay: b.initial, updated: now}
		return
	}
	e.delay *= 2
	if e.delay > b.max {
		e.delay = b.max
	}
	e.updated = now
}

// Forget drops every key of owner.
func (b *BackOff) Forget(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if strings.HasPrefix(k, owner+"/") {
			delete(b.entries, k)
		}
	}
}
