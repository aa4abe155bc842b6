package queue

import (
	"testing"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// waitLen waits (on the wall clock, generously) for the queue to hold n ready keys: the
// workqueue moves delayed keys from its own goroutine.
func waitLen(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d ready keys, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func get(t *testing.T, q *Queue, want string) {
	t.Helper()
	k, shutdown := q.Get()
	if shutdown || k != want {
		t.Fatalf("Get = %q, %v; want %q", k, shutdown, want)
	}
	q.Done(k)
}

func TestBackoffAndMove(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	q := New(clk, time.Second, time.Minute, nil)
	defer q.ShutDown()

	q.Add("ns/p")
	get(t, q, "ns/p")

	t.Run("unschedulable waits its back-off", func(t *testing.T) {
		q.Unschedulable("ns/p")
		if q.Len() != 0 {
			t.Fatalf("unschedulable pod is ready at once")
		}
		for clk.Waiters() == 0 {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		waitLen(t, q, 1)
		get(t, q, "ns/p")
	})
	t.Run("back-off doubles", func(t *testing.T) {
		q.Unschedulable("ns/p")
		if got := q.Backoffs("ns/p"); got != 2 {
			t.Fatalf("backoffs = %d, want 2", got)
		}
		for clk.Waiters() == 0 {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		time.Sleep(50 * time.Millisecond) // the workqueue loop would need this long to move it
		if q.Len() != 0 {
			t.Fatalf("ready after 1s of a 2s back-off")
		}
		clk.Step(time.Second)
		waitLen(t, q, 1)
		get(t, q, "ns/p")
	})
	t.Run("a cluster change brings it back early, once", func(t *testing.T) {
		q.Unschedulable("ns/p")
		q.MoveAllToActive()
		waitLen(t, q, 1)
		get(t, q, "ns/p")
		q.MoveAllToActive()
		if q.Len() != 0 {
			t.Fatalf("a second move without a new failure made the pod ready again")
		}
	})
	t.Run("retry is not moved", func(t *testing.T) {
		q.Forget("ns/p")
		q.Retry("ns/p")
		q.MoveAllToActive()
		if q.Len() != 0 {
			t.Fatalf("a bind retry was moved early")
		}
	})
}

// Pods of higher priority are tried first, pods of equal priority in the order they came;
// a pod retried after its back-off keeps its priority.
func TestPriorityOrder(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	q := New(clk, time.Second, time.Minute, nil)
	defer q.ShutDown()
	for _, p := range []struct {
		key      string
		priority int32
	}{{"ns/low", 0}, {"ns/critical", 2000000000}, {"ns/mid", 100}, {"ns/mid2", 100}, {"ns/negative", -5}} {
		q.SetPriority(p.key, p.priority)
		q.Add(p.key)
	}
	for _, want := range []string{"ns/critical", "ns/mid", "ns/mid2", "ns/low", "ns/negative"} {
		get(t, q, want)
	}

	q.Add("ns/low")
	get(t, q, "ns/low")
	q.Unschedulable("ns/low")
	q.SetPriority("ns/high", 500)
	q.Add("ns/high")
	clk.Step(2 * time.Second)
	waitLen(t, q, 2)
	get(t, q, "ns/high")
	get(t, q, "ns/low")

	q.Forget("ns/high")
	if p := q.priority("ns/high"); p != 0 {
		t.Errorf("a forgotten pod keeps priority %d", p)
	}
}
