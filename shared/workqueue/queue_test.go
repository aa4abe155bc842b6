package workqueue

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/testwait"
	"minik8s.io/shared/workqueue/clock"
)

// eventually polls cond until it holds or a generous deadline passes.

func drainReady[T comparable](q *Queue[T]) []T {
	var got []T
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	return got
}

func TestAddDedupsAndKeepsOrder(t *testing.T) {
	tests := []struct {
		name string
		adds []string
		want []string
	}{
		{"fifo", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"duplicates collapse to first position", []string{"a", "b", "a", "c", "b"}, []string{"a", "b", "c"}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := New(Config[string]{})
			defer q.ShutDown()
			for _, a := range tt.adds {
				q.Add(a)
			}
			if diff := cmp.Diff(tt.want, drainReady(q)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddWhileProcessingRequeuesAfterDone(t *testing.T) {
	q := New(Config[string]{})
	defer q.ShutDown()
	q.Add("a")
	item, _ := q.Get()
	q.Add("a")
	q.Add("a")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len while a is processing = %d, want 0: a must not be handed out twice", n)
	}
	q.Done(item)
	if n := q.Len(); n != 1 {
		t.Fatalf("Len after Done = %d, want 1", n)
	}
	again, _ := q.Get()
	if again != "a" {
		t.Fatalf("Get = %q, want a", again)
	}
	q.Done(again)
	if n := q.Len(); n != 0 {
		t.Errorf("Len after second Done = %d, want 0", n)
	}
}

func TestNeverTwoWorkersOnOneItem(t *testing.T) {
	q := New(Config[int]{})
	const keys, rounds, workers = 20, 200, 8
	var inFlight [keys]atomic.Int32
	var violations, processed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				if inFlight[k].Add(1) != 1 {
					violations.Add(1)
				}
				processed.Add(1)
				for range 100 { // stay busy a little so overlaps have a chance to show
					_ = fmt.Sprint(k)
				}
				inFlight[k].Add(-1)
				q.Done(k)
			}
		}()
	}
	var adders sync.WaitGroup
	for a := range 4 {
		adders.Add(1)
		go func() {
			defer adders.Done()
			for r := range rounds {
				q.Add((r + a) % keys)
			}
		}()
	}
	adders.Wait()
	q.ShutDownWithDrain()
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Errorf("%d times an item was processed by two workers at once", v)
	}
	if processed.Load() < keys {
		t.Errorf("processed %d items, want at least %d (every key)", processed.Load(), keys)
	}
}

func TestShutDownReleasesBlockedGet(t *testing.T) {
	q := New(Config[string]{})
	got := make(chan bool)
	go func() {
		_, shutdown := q.Get()
		got <- shutdown
	}()
	q.ShutDown()
	select {
	case shutdown := <-got:
		if !shutdown {
			t.Error("Get after ShutDown on an empty queue returned an item")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get stayed blocked after ShutDown")
	}
}

func TestShutDownHandsOutQueuedItemsThenStops(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	q.ShutDown()
	q.Add("b") // dropped
	item, shutdown := q.Get()
	if shutdown || item != "a" {
		t.Fatalf("Get = %q, %v; want a, false", item, shutdown)
	}
	q.Done(item)
	if _, shutdown := q.Get(); !shutdown {
		t.Error("Get after the last item: shutdown = false, want true (adds after ShutDown are dropped)")
	}
}

func TestShutDownWithDrainWaitsForDone(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	item, _ := q.Get()
	drained := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(drained)
	}()
	testwait.For(t, "shutdown to begin", q.ShuttingDown)
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned while an item was still processing")
	default:
	}
	q.Done(item)
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("ShutDownWithDrain did not return after Done")
	}
}

func TestShutDownReleasesDrain(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	q.Get()
	drained := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(drained)
	}()
	testwait.For(t, "shutdown to begin", q.ShuttingDown)
	q.ShutDown()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("ShutDown did not release ShutDownWithDrain")
	}
}

func TestAddAfter(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	type add struct {
		item  string
		delay time.Duration
	}
	tests := []struct {
		name string
		adds []add
		// steps are cumulative clock advances; want[i] is what is ready after steps[i].
		steps []time.Duration
		want  [][]string
	}{
		{
			name:  "ready only after its delay",
			adds:  []add{{"a", 50 * time.Millisecond}},
			steps: []time.Duration{49 * time.Millisecond, time.Millisecond},
			want:  [][]string{nil, {"a"}},
		},
		{
			name:  "in deadline order",
			adds:  []add{{"late", 30 * time.Second}, {"early", 10 * time.Second}, {"mid", 20 * time.Second}},
			steps: []time.Duration{15 * time.Second, time.Minute},
			want:  [][]string{{"early"}, {"mid", "late"}},
		},
		{
			name:  "earlier deadline wins for the same item",
			adds:  []add{{"a", time.Minute}, {"a", time.Second}},
			steps: []time.Duration{time.Second, time.Hour},
			want:  [][]string{{"a"}, nil},
		},
		{
			name:  "later deadline does not postpone",
			adds:  []add{{"a", time.Second}, {"a", time.Minute}},
			steps: []time.Duration{time.Second, time.Hour},
			want:  [][]string{{"a"}, nil},
		},
		{
			name:  "non-positive delay is immediate",
			adds:  []add{{"a", 0}, {"b", -time.Second}},
			steps: []time.Duration{0},
			want:  [][]string{{"a", "b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(start)
			q := New(Config[string]{Clock: fc})
			defer q.ShutDown()
			for _, a := range tt.adds {
				q.AddAfter(a.item, a.delay)
			}
			for i, step := range tt.steps {
				want := tt.want[i]
				// The loop arms a timer for the earliest deadline before blocking; wait for it
				// so the step is seen by the loop, not raced past.
				waitArmed(t, q, fc)
				fc.Step(step)
				if len(want) > 0 {
					testwait.For(t, fmt.Sprintf("%d ready items", len(want)), func() bool { return q.Len() >= len(want) })
				}
				waitArmed(t, q, fc)
				if diff := cmp.Diff(want, drainReady(q)); diff != "" {
					t.Errorf("ready after step %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// waitArmed waits until the delaying loop has caught up: either nothing is waiting or a timer
// for the earliest deadline is armed.
func waitArmed[T comparable](t *testing.T, q *Queue[T], fc *clock.Fake) {
	t.Helper()
	testwait.For(t, "delaying loop to arm its timer", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.waiting) == 0 {
			return true
		}
		return fc.Waiters() > 0 && len(q.wake) == 0 && q.waiting[0].at.After(fc.Now())
	})
}

func TestAddAfterShutDownIsDropped(t *testing.T) {
	fc := clock.NewFake(time.Now())
	q := New(Config[string]{Clock: fc})
	q.ShutDown()
	q.AddAfter("a", time.Second)
	q.AddAfter("b", 0)
	fc.Step(time.Hour)
	if n := q.Len(); n != 0 {
		t.Errorf("Len = %d after adds on a shut-down queue, want 0", n)
	}
}

func TestAddRateLimitedBacksOffPerItem(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	q := New(Config[string]{Clock: fc, BaseDelay: time.Second, MaxDelay: time.Minute})
	defer q.ShutDown()

	q.AddRateLimited("a") // 1s
	q.AddRateLimited("a") // 2s, but the 1s deadline already waiting wins
	if got := q.NumRequeues("a"); got != 2 {
		t.Fatalf("NumRequeues = %d, want 2", got)
	}
	waitArmed(t, q, fc)
	fc.Step(999 * time.Millisecond)
	waitArmed(t, q, fc)
	if n := q.Len(); n != 0 {
		t.Fatalf("ready before backoff elapsed: Len = %d", n)
	}
	fc.Step(time.Millisecond)
	testwait.For(t, "a after 1s", func() bool { return q.Len() == 1 })
	drainReady(q)

	q.AddRateLimited("a") // third failure: 4s
	waitArmed(t, q, fc)
	fc.Step(3 * time.Second)
	waitArmed(t, q, fc)
	if n := q.Len(); n != 0 {
		t.Fatalf("third retry ready after 3s, want 4s backoff")
	}
	fc.Step(time.Second)
	testwait.For(t, "a after 4s", func() bool { return q.Len() == 1 })

	q.Forget("a")
	if got := q.NumRequeues("a"); got != 0 {
		t.Errorf("NumRequeues after Forget = %d, want 0", got)
	}
}

func TestContains(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	q := New(Config[string]{Clock: clk})
	defer q.ShutDown()
	if q.Contains("a") {
		t.Fatal("empty queue contains a")
	}
	q.Add("a")
	if !q.Contains("a") {
		t.Fatal("queued item not contained")
	}
	k, _ := q.Get()
	if !q.Contains(k) {
		t.Fatal("item being processed not contained")
	}
	q.Done(k)
	if q.Contains("a") {
		t.Fatal("item contained after Done")
	}
	q.AddAfter("b", time.Minute)
	if !q.Contains("b") {
		t.Fatal("delayed item not contained")
	}
}

func TestLessOrdersReadyItems(t *testing.T) {
	prio := map[string]int{"low": 0, "high": 10, "mid": 5, "high2": 10, "low2": 0}
	q := New(Config[string]{Less: func(a, b string) bool { return prio[a] > prio[b] }})
	defer q.ShutDown()
	for _, k := range []string{"low", "high", "mid", "low2", "high2"} {
		q.Add(k)
	}
	q.Add("high") // already queued: no second copy
	var got []string
	for q.Len() > 0 {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	want := []string{"high", "high2", "mid", "low", "low2"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// An item added while it is processed comes back after Done, in its place.
	q.Add("low")
	k, _ := q.Get()
	q.Add("mid")
	q.Add(k)
	q.Done(k)
	if first, _ := q.Get(); first != "mid" {
		t.Errorf("first %s, want mid", first)
	}
}
