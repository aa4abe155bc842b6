package workqueue

import (
	"math"
	"sync"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// RateLimiter decides how long a failing item waits before it is retried.
type RateLimiter[T comparable] interface {
	// When records one more failure of item and returns how long it should wait.
	When(item T) time.Duration
	// Forget clears item's failure history.
	Forget(item T)
	// NumRequeues is the number of failures recorded since the last Forget.
	NumRequeues(item T) int
}

// ItemExponential waits base*2^failures for an item, capped at max.
type ItemExponential[T comparable] struct {
	mu       sync.Mutex
	failures map[T]int
	base     time.Duration
	max      time.Duration
}

// NewItemExponential returns a per-item exponential backoff from base up to max.
func NewItemExponential[T comparable](base, max time.Duration) *ItemExponential[T] {
	return &ItemExponential[T]{failures: map[T]int{}, base: base, max: max}
}

func (r *ItemExponential[T]) When(item T) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	exp := r.failures[item]
	r.failures[item] = exp + 1
	// Compute in float so a long failure streak saturates at max instead of overflowing.
	backoff := float64(r.base.Nanoseconds()) * math.Pow(2, float64(exp))
	if backoff > float64(math.MaxInt64) || time.Duration(backoff) > r.max {
		return r.max
	}
	return time.Duration(backoff)
}

func (r *ItemExponential[T]) Forget(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, item)
}

func (r *ItemExponential[T]) NumRequeues(item T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[item]
}

// Bucket is a token bucket over all items: it lets Burst retries through at once and then
// QPS per second, so a mass failure cannot flood the apiserver even when every item is new.
type Bucket[T comparable] struct {
	mu     sync.Mutex
	clock  clock.Clock
	qps    float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket of burst tokens refilled at qps.
func NewBucket[T comparable](qps float64, burst int, clk clock.Clock) *Bucket[T] {
	return &Bucket[T]{clock: clk, qps: qps, burst: float64(burst), tokens: float64(burst), last: clk.Now()}
}

// When reserves a token. Tokens may go negative: a reservation made now is served when the
// refill catches up, which is the delay returned.
func (b *Bucket[T]) When(T) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(b.burst, b.tokens+elapsed.Seconds()*b.qps)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.qps * float64(time.Second))
}

func (b *Bucket[T]) Forget(T)          {}
func (b *Bucket[T]) NumRequeues(T) int { return 0 }

// Max combines limiters: an item waits as long as the strictest of them says.
type Max[T comparable] struct{ limiters []RateLimiter[T] }

// MaxOf returns a limiter that waits the longest of limiters.
func MaxOf[T comparable](limiters ...RateLimiter[T]) *Max[T] { return &Max[T]{limiters: limiters} }

func (m *Max[T]) When(item T) time.Duration {
	var d time.Duration
	for _, l := range m.limiters {
		d = max(d, l.When(item))
	}
	return d
}

func (m *Max[T]) Forget(item T) {
	for _, l := range m.limiters {
		l.Forget(item)
	}
}

func (m *Max[T]) NumRequeues(item T) int {
	var n int
	for _, l := range m.limiters {
		n = max(n, l.NumRequeues(item))
	}
	return n
}
