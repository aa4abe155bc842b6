package queue

import (
	"sync"
	"time"

	"minik8s.io/shared/workqueue"
	"minik8s.io/shared/workqueue/clock"
)

// Defaults of the per-pod back-off.
const (
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = time.Minute
)

// Queue is a queue of pod keys (namespace/name). It is safe for concurrent use.
type Queue struct {
	q       *workqueue.Queue[string]
	limiter *workqueue.ItemExponential[string]

	// priorities holds the pods' priorities (key -> int32), which order the pods ready to be
	// tried: higher first, as Kubernetes' scheduling queue takes them. A pod's priority never
	// changes once set at admission.
	priorities sync.Map

	mu sync.Mutex
	// waiting are the pods that fit nowhere at their last attempt and sit out their back-off.
	waiting map[string]struct{}
}

// New returns an empty queue reporting to m (nil: nowhere); zero durations take the defaults.
func New(clk clock.Clock, initial, maxBackoff time.Duration, m workqueue.Metrics) *Queue {
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	limiter := workqueue.NewItemExponential[string](initial, maxBackoff)
	q := &Queue{limiter: limiter, waiting: map[string]struct{}{}}
	q.q = workqueue.New(workqueue.Config[string]{Clock: clk, RateLimiter: limiter, Metrics: m,
		Less: func(a, b string) bool { return q.priority(a) > q.priority(b) }})
	return q
}

// SetPriority records key's priority before it is added; a key without one has priority 0.
func (q *Queue) SetPriority(key string, priority int32) {
	if priority == 0 {
		q.priorities.Delete(key)
		return
	}
	q.priorities.Store(key, priority)
}

func (q *Queue) priority(key string) int32 {
	if p, ok := q.priorities.Load(key); ok {
		return p.(int32)
	}
	return 0
}

// Add makes key active now: a new pending pod or one whose spec changed.
func (q *Queue) Add(key string) { q.q.Add(key) }

// Get blocks for the next key; shutdown is true once the queue is shut down.
func (q *Queue) Get() (key string, shutdown bool) { return q.q.Get() }

// Done ends the processing of key, which Get handed out.
func (q *Queue) Done(key string) { q.q.Done(key) }

// Unschedulable puts key back after its back-off, which doubles with every failure.
func (q *Queue) Unschedulable(key string) {
	q.mu.Lock()
	q.waiting[key] = struct{}{}
	q.mu.Unlock()
	q.q.AddRateLimited(key)
}

// Retry puts key back after its back-off for a failure that was not about fitting (a bind
// that failed for a transient reason); changes in the cluster do not bring it back early.
func (q *Queue) Retry(key string) { q.q.AddRateLimited(key) }

// Forget resets key's back-off: it was bound, deleted, or is no longer ours.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	delete(q.waiting, key)
	q.mu.Unlock()
	q.q.Forget(key)
	q.priorities.Delete(key)
}

// Backoffs is how many failures key's back-off counts.
func (q *Queue) Backoffs(key string) int { return q.q.NumRequeues(key) }

// MoveAllToActive brings every pod waiting out a back-off back now, because something changed
// that may let it fit. Each failure earns one early retry, so a stream of changes (nodes
// reporting status) cannot make pods spin: the next early retry needs a new failure first.
func (q *Queue) MoveAllToActive() {
	q.mu.Lock()
	keys := make([]string, 0, len(q.waiting))
	for k := range q.waiting {
		keys = append(keys, k)
	}
	clear(q.waiting)
	q.mu.Unlock()
	for _, k := range keys {
		q.q.Add(k)
	}
}

// Has reports whether key is ready, being processed, or waiting out a back-off: whether the
// queue will hand it out again by itself.
func (q *Queue) Has(key string) bool { return q.q.Contains(key) }

// Len is how many keys are ready for Get.
func (q *Queue) Len() int { return q.q.Len() }

// ShutDown makes Get return shutdown once the ready keys are handed out.
func (q *Queue) ShutDown() { q.q.ShutDown() }
