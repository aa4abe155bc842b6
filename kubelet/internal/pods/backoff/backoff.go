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

// BackOff tracks restart delays by key (pod uid + container name). Safe for concurrent use.
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

// New returns a back-off with Kubernetes' defaults.
func New(c clock.Clock) *BackOff {
	return &BackOff{clock: c, initial: DefaultInitial, max: DefaultMax, resetAfter: DefaultResetAfter, entries: map[string]*entry{}}
}

// Key names one container of one pod.
func Key(podUID, container string) string { return podUID + "/" + container }

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

// Forget drops every key of the pod with the given uid.
func (b *BackOff) Forget(podUID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if strings.HasPrefix(k, podUID+"/") {
			delete(b.entries, k)
		}
	}
}
