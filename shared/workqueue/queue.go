package workqueue

import (
	"container/heap"
	"sync"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// Default backoff and overall rate, as in Kubernetes controllers.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 1000 * time.Second
	DefaultQPS       = 10
	DefaultBurst     = 100
)

// Config tunes a Queue. The zero value gives the defaults above on the wall clock.
type Config[T comparable] struct {
	// Clock drives AddAfter and the token bucket; tests pass a *clock.Fake.
	Clock clock.Clock
	// RateLimiter decides AddRateLimited delays. When nil, a per-item exponential backoff
	// (BaseDelay..MaxDelay) combined with a token bucket (QPS, Burst) is used.
	RateLimiter RateLimiter[T]
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	QPS         float64
	Burst       int
	// Metrics, when set, observes the queue: what it reports per queue is what Kubernetes'
	// workqueue metrics report (depth, adds, time queued, time processed, retries).
	Metrics Metrics
	// Less, when set, orders the items ready for Get: Get hands out an item that no other
	// ready one is Less than, the earliest added among equals. An item's order must not
	// change while it is queued. nil keeps the queue first in, first out.
	Less func(a, b T) bool
}

// Metrics observes one queue. The queue calls it under its lock: it must be quick and must
// not call the queue.
type Metrics interface {
	// Added: an item was added that was not queued already.
	Added()
	// Depth: n items are ready for Get.
	Depth(n int)
	// Queued: an item waited d from its Add to its Get.
	Queued(d time.Duration)
	// Worked: an item was processed for d, from its Get to its Done.
	Worked(d time.Duration)
	// Retried: an item was added through AddRateLimited (a failure).
	Retried()
}

// Queue is a deduplicating, delaying, rate-limited FIFO of keys. An item is in at most one of
// three places: queued (waiting for Get), processing (handed out, not yet Done), or waiting
// (delayed by AddAfter). Adding an item that is processing marks it dirty, and Done re-queues
// it, which is what keeps one key on one worker at a time.
type Queue[T comparable] struct {
	clock   clock.Clock
	limiter RateLimiter[T]
	metrics Metrics

	mu sync.Mutex
	// ready wakes Get; drained wakes ShutDownWithDrain. Separate conds so a Signal meant for
	// a worker is never swallowed by the drain waiter.
	ready   *sync.Cond
	drained *sync.Cond

	queue        []T
	ordered      *readyHeap[T] // the ready items instead of queue, with Config.Less
	dirty        map[T]struct{}
	processing   map[T]struct{}
	shuttingDown bool
	draining     bool

	waiting     waitHeap[T]
	waitIndex   map[T]*waitEntry[T]
	loopStarted bool
	wake        chan struct{}
	stop        chan struct{}
	stopOnce    sync.Once

	// With metrics: when each dirty item was added, and when each processing one was handed out.
	addedAt   map[T]time.Time
	startedAt map[T]time.Time
}

// New returns an empty queue. It starts no goroutine: the delaying loop starts on the first
// delayed add and ends at ShutDown.
func New[T comparable](cfg Config[T]) *Queue[T] {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RateLimiter == nil {
		base, maxDelay, qps, burst := cfg.BaseDelay, cfg.MaxDelay, cfg.QPS, cfg.Burst
		if base <= 0 {
			base = DefaultBaseDelay
		}
		if maxDelay <= 0 {
			maxDelay = DefaultMaxDelay
		}
		if qps <= 0 {
			qps = DefaultQPS
		}
		if burst <= 0 {
			burst = DefaultBurst
		}
		cfg.RateLimiter = MaxOf(NewItemExponential[T](base, maxDelay), NewBucket[T](qps, burst, cfg.Clock))
	}
	q := &Queue[T]{
		clock:      cfg.Clock,
		limiter:    cfg.RateLimiter,
		metrics:    cfg.Metrics,
		dirty:      map[T]struct{}{},
		processing: map[T]struct{}{},
		waitIndex:  map[T]*waitEntry[T]{},
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	if q.metrics != nil {
		q.addedAt, q.startedAt = map[T]time.Time{}, map[T]time.Time{}
	}
	if cfg.Less != nil {
		q.ordered = &readyHeap[T]{less: cfg.Less}
	}
	q.ready = sync.NewCond(&q.mu)
	q.drained = sync.NewCond(&q.mu)
	return q
}

// Add queues item unless it is already queued. If item is being processed it is queued again
// after Done. Adds after ShutDown are dropped.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(item)
}

func (q *Queue[T]) addLocked(item T) {
	if q.shuttingDown {
		return
	}
	if _, ok := q.dirty[item]; ok {
		return
	}
	q.dirty[item] = struct{}{}
	if q.metrics != nil {
		q.metrics.Added()
		q.addedAt[item] = q.clock.Now()
	}
	if _, ok := q.processing[item]; ok {
		return
	}
	q.push(item)
}

// push makes item ready for Get.
func (q *Queue[T]) push(item T) {
	if q.ordered != nil {
		q.ordered.seq++
		heap.Push(q.ordered, readyItem[T]{item: item, seq: q.ordered.seq})
	} else {
		q.queue = append(q.queue, item)
	}
	if q.metrics != nil {
		q.metrics.Depth(q.readyLen())
	}
	q.ready.Signal()
}

// readyLen is the number of items ready for Get; q.mu is held.
func (q *Queue[T]) readyLen() int {
	if q.ordered != nil {
		return q.ordered.Len()
	}
	return len(q.queue)
}

// pop takes the next ready item; q.mu is held and one is ready.
func (q *Queue[T]) pop() T {
	if q.ordered != nil {
		return heap.Pop(q.ordered).(readyItem[T]).item
	}
	item := q.queue[0]
	var zero T
	q.queue[0] = zero // let the GC have it
	q.queue = q.queue[1:]
	return item
}

// Len is the number of items ready for Get.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.readyLen()
}

// Get blocks until an item is ready or the queue is shut down and empty; then shutdown is
// true. Items queued before ShutDown are still handed out, so workers can finish them. The
// caller must call Done(item) when it has finished.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.readyLen() == 0 && !q.shuttingDown {
		q.ready.Wait()
	}
	if q.readyLen() == 0 {
		var zero T
		return zero, true
	}
	item = q.pop()
	q.processing[item] = struct{}{}
	delete(q.dirty, item)
	if q.metrics != nil {
		now := q.clock.Now()
		q.metrics.Depth(q.readyLen())
		q.metrics.Queued(now.Sub(q.addedAt[item]))
		delete(q.addedAt, item)
		q.startedAt[item] = now
	}
	return item, false
}

// Done marks item as finished; if it was added meanwhile it becomes ready again.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, item)
	if q.metrics != nil {
		if at, ok := q.startedAt[item]; ok {
			q.metrics.Worked(q.clock.Now().Sub(at))
			delete(q.startedAt, item)
		}
	}
	if _, ok := q.dirty[item]; ok {
		q.push(item)
		return
	}
	if len(q.processing) == 0 {
		q.drained.Broadcast()
	}
}

// ShutDown makes Get return shutdown=true once the queue is empty and drops later adds and
// pending delayed items. It does not wait for workers.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDownLocked()
	q.draining = false
	q.drained.Broadcast()
}

// ShutDownWithDrain is ShutDown that also waits until every handed-out item is Done. A
// concurrent ShutDown releases it early.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDownLocked()
	q.draining = true
	for q.draining && len(q.processing) > 0 {
		q.drained.Wait()
	}
}

func (q *Queue[T]) shutDownLocked() {
	q.shuttingDown = true
	q.ready.Broadcast()
	q.stopOnce.Do(func() { close(q.stop) })
}

// ShuttingDown reports whether ShutDown has been called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// AddAfter adds item once d has passed on the queue's clock. If item is already waiting, the
// earlier of the two deadlines wins.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	if d <= 0 {
		q.addLocked(item)
		return
	}
	at := q.clock.Now().Add(d)
	if e, ok := q.waitIndex[item]; ok {
		if at.Before(e.at) {
			e.at = at
			heap.Fix(&q.waiting, e.index)
		}
	} else {
		e := &waitEntry[T]{item: item, at: at}
		heap.Push(&q.waiting, e)
		q.waitIndex[item] = e
	}
	if !q.loopStarted {
		q.loopStarted = true
		go q.waitLoop()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Contains reports whether item is queued, being processed, or waiting out a delay: whether
// the queue will hand it out (again) without another Add.
func (q *Queue[T]) Contains(item T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.dirty[item]; ok {
		return true
	}
	if _, ok := q.processing[item]; ok {
		return true
	}
	_, ok := q.waitIndex[item]
	return ok
}

// AddRateLimited adds item after the delay the rate limiter gives it; each call without a
// Forget in between counts as one more failure.
func (q *Queue[T]) AddRateLimited(item T) {
	if q.metrics != nil {
		q.mu.Lock()
		if !q.shuttingDown {
			q.metrics.Retried()
		}
		q.mu.Unlock()
	}
	q.AddAfter(item, q.limiter.When(item))
}

// Forget resets item's backoff; call it after the item was processed successfully.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues is how many times item has been rate-limited since its last Forget.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// waitLoop moves delayed items to the queue when their time comes. One timer is armed at a
// time, for the earliest deadline; AddAfter wakes the loop to re-arm it.
func (q *Queue[T]) waitLoop() {
	for {
		q.mu.Lock()
		if q.shuttingDown {
			q.mu.Unlock()
			return
		}
		now := q.clock.Now()
		for len(q.waiting) > 0 && !q.waiting[0].at.After(now) {
			e := heap.Pop(&q.waiting).(*waitEntry[T])
			delete(q.waitIndex, e.item)
			q.addLocked(e.item)
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if len(q.waiting) > 0 {
			timer = q.clock.NewTimer(q.waiting[0].at.Sub(now))
			fire = timer.C()
		}
		q.mu.Unlock()

		select {
		case <-q.stop:
		case <-q.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

type waitEntry[T comparable] struct {
	item  T
	at    time.Time
	index int
}

// waitHeap orders delayed items by deadline.
type waitHeap[T comparable] []*waitEntry[T]

func (h waitHeap[T]) Len() int           { return len(h) }
func (h waitHeap[T]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap[T]) Push(x any) {
	e := x.(*waitEntry[T])
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *waitHeap[T]) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}

// readyHeap holds ready items by Config.Less, then by the order they were added.
type readyHeap[T comparable] struct {
	items []readyItem[T]
	less  func(a, b T) bool
	seq   uint64
}

type readyItem[T comparable] struct {
	item T
	seq  uint64
}

func (h *readyHeap[T]) Len() int { return len(h.items) }
func (h *readyHeap[T]) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if h.less(a.item, b.item) {
		return true
	}
	if h.less(b.item, a.item) {
		return false
	}
	return a.seq < b.seq
}
func (h *readyHeap[T]) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *readyHeap[T]) Push(x any)    { h.items = append(h.items, x.(readyItem[T])) }
func (h *readyHeap[T]) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	h.items[n] = readyItem[T]{}
	h.items = h.items[:n]
	return x
}
