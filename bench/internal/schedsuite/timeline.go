package schedsuite

import (
	"sync"
	"time"

	"minik8s.io/bench/internal/stats"
)

// timeline records when each pod's create was sent and when a watch first saw it bound.
type timeline struct {
	mu      sync.Mutex
	created map[string]time.Time
	bound   map[string]time.Time
	done    chan struct{} // closed when want pods are bound
	want    int
}

func newTimeline(want int) *timeline {
	return &timeline{created: make(map[string]time.Time, want), bound: make(map[string]time.Time, want),
		done: make(chan struct{}), want: want}
}

func (t *timeline) sent(name string, at time.Time) {
	t.mu.Lock()
	t.created[name] = at
	t.mu.Unlock()
}

// sawBound keeps the first sighting only: later updates (the Running report) are not bindings.
func (t *timeline) sawBound(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.bound[name]; ok {
		return
	}
	t.bound[name] = at
	if len(t.bound) == t.want {
		close(t.done)
	}
}

// Result is one measured phase.
type Result struct {
	Pods    int
	Elapsed time.Duration // first create sent to last binding seen
	Latency stats.Summary // create sent to binding seen, per pod
	CPU     CPUPerPod     // from the first create to the last binding seen
}

// PodsPerSecond is the binding throughput.
func (r Result) PodsPerSecond() float64 { return stats.Rate(r.Pods, r.Elapsed) }

// result summarises the pods that were both sent and seen bound.
func (t *timeline) result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first, last time.Time
	lat := make([]time.Duration, 0, len(t.bound))
	for name, b := range t.bound {
		c, ok := t.created[name]
		if !ok {
			continue
		}
		if first.IsZero() || c.Before(first) {
			first = c
		}
		if b.After(last) {
			last = b
		}
		lat = append(lat, b.Sub(c))
	}
	return Result{Pods: len(lat), Elapsed: last.Sub(first), Latency: stats.Summarize(lat)}
}
