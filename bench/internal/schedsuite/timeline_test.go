package schedsuite

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimelineResult(t *testing.T) {
	t0 := time.Unix(100, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name        string
		sent, bound map[string]time.Time
		wantPods    int
		wantElapsed time.Duration
		wantP50     time.Duration
		wantDone    bool
	}{
		{name: "two pods", sent: map[string]time.Time{"a": ms(0), "b": ms(10)},
			bound:    map[string]time.Time{"a": ms(5), "b": ms(40)},
			wantPods: 2, wantElapsed: 40 * time.Millisecond, wantP50: 5 * time.Millisecond, wantDone: true},
		{name: "a binding of an unknown pod is ignored", sent: map[string]time.Time{"a": ms(0)},
			bound:    map[string]time.Time{"a": ms(7), "x": ms(99)},
			wantPods: 1, wantElapsed: 7 * time.Millisecond, wantP50: 7 * time.Millisecond, wantDone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTimeline(len(tc.sent))
			for n, at := range tc.sent {
				tl.sent(n, at)
			}
			for n, at := range tc.bound {
				tl.sawBound(n, at)
				tl.sawBound(n, at.Add(time.Hour)) // a later update is not a binding
			}
			r := tl.result()
			got := []any{r.Pods, r.Elapsed, r.Latency.P50}
			if diff := cmp.Diff([]any{tc.wantPods, tc.wantElapsed, tc.wantP50}, got); diff != "" {
				t.Errorf("pods, elapsed, p50 (-want +got):\n%s", diff)
			}
			select {
			case <-tl.done:
				if !tc.wantDone {
					t.Error("done closed early")
				}
			default:
				if tc.wantDone {
					t.Error("done not closed")
				}
			}
		})
	}
}
