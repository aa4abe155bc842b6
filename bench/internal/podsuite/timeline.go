package podsuite

import (
	"context"
	"sync"
	"time"

	"minik8s.io/bench/internal/stats"
)

// timeline is one pod's startup. Sandbox and App are when the pause and the
// app container started (Docker's event time for the kubelet, the return of
// the start call for the baseline); Running is when the pod was seen running:
// through the API watch for the kubelet, the app's start for the baseline.
type timeline struct {
	Start, Sandbox, App, Running time.Time
}

// Phases summarises a set of timelines: Total is Start to Running, then its
// three consecutive parts.
type Phases struct {
	Total, ToSandbox, ToApp, ToRunning stats.Summary
}

// since is b-a, or a negative duration when either is unknown, which
// summarize leaves out.
func since(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return -1
	}
	return b.Sub(a)
}

func summarize(ts []timeline) Phases {
	var total, sb, app, run []time.Duration
	add := func(s *[]time.Duration, d time.Duration) {
		if d >= 0 {
			*s = append(*s, d)
		}
	}
	for _, t := range ts {
		add(&total, since(t.Start, t.Running))
		add(&sb, since(t.Start, t.Sandbox))
		add(&app, since(t.Sandbox, t.App))
		add(&run, since(t.App, t.Running))
	}
	return Phases{Total: stats.Summarize(total), ToSandbox: stats.Summarize(sb), ToApp: stats.Summarize(app), ToRunning: stats.Summarize(run)}
}

// schedule calls fn(i) for i in [0, n), each in its own goroutine, the i-th
// at start + i*interval (all at once when interval is 0), and returns when
// every call has returned. The schedule is fixed: a slow call does not delay
// the next start, as with pods created by independent clients.
func schedule(ctx context.Context, n int, interval time.Duration, fn func(i int)) {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return
			case <-time.After(d):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}
