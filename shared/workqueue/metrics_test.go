package workqueue

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/testwait"
	"minik8s.io/shared/workqueue/clock"
)

// recordedMetrics keeps what a queue reported.
type recordedMetrics struct {
	mu             sync.Mutex
	added, retried int
	depths         []int
	queued, worked []time.Duration
}

func (m *recordedMetrics) Added()      { m.mu.Lock(); m.added++; m.mu.Unlock() }
func (m *recordedMetrics) Retried()    { m.mu.Lock(); m.retried++; m.mu.Unlock() }
func (m *recordedMetrics) Depth(n int) { m.mu.Lock(); m.depths = append(m.depths, n); m.mu.Unlock() }
func (m *recordedMetrics) Queued(d time.Duration) {
	m.mu.Lock()
	m.queued = append(m.queued, d)
	m.mu.Unlock()
}
func (m *recordedMetrics) Worked(d time.Duration) {
	m.mu.Lock()
	m.worked = append(m.worked, d)
	m.mu.Unlock()
}

func TestMetrics(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	m := &recordedMetrics{}
	q := New(Config[string]{Clock: clk, Metrics: m, RateLimiter: NewItemExponential[string](time.Second, time.Minute)})
	q.Add("a")
	q.Add("b")
	q.Add("a") // already queued: no add
	clk.Step(2 * time.Second)
	item, _ := q.Get() // a, queued 2 s
	q.Add("a")         // processing: added again, ready after Done
	clk.Step(3 * time.Second)
	q.Done(item) // worked 3 s; a is ready again
	item, _ = q.Get()
	q.Done(item) // b, queued 5 s, worked 0
	q.AddRateLimited("c")
	testwait.For(t, "the back-off timer", func() bool { return clk.Waiters() > 0 })
	clk.Step(time.Second)
	testwait.For(t, "the retried item", func() bool { return q.Len() == 2 })

	m.mu.Lock()
	defer m.mu.Unlock()
	got := struct {
		Added, Retried int
		Depths         []int
		Queued, Worked []time.Duration
	}{m.added, m.retried, m.depths, m.queued, m.worked}
	want := struct {
		Added, Retried int
		Depths         []int
		Queued, Worked []time.Duration
	}{
		Added: 4, Retried: 1,
		// a, b queued; a taken; a back after Done; b taken; c after its back-off.
		Depths: []int{1, 2, 1, 2, 1, 2},
		Queued: []time.Duration{2 * time.Second, 5 * time.Second},
		Worked: []time.Duration{3 * time.Second, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
