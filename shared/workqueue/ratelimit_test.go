package workqueue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/workqueue/clock"
)

func TestItemExponential(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		base, max time.Duration
		calls     int
		want      []time.Duration
	}{
		{"doubles from base", 5 * ms, 1000 * time.Second, 5, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms}},
		{"capped at max", time.Second, 5 * time.Second, 5, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"no overflow on long streaks", 5 * ms, 1000 * time.Second, 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewItemExponential[string](tt.base, tt.max)
			var got []time.Duration
			for range tt.calls {
				got = append(got, r.When("a"))
			}
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("delays (-want +got):\n%s", diff)
				}
			}
			if last := got[len(got)-1]; last <= 0 || last > tt.max {
				t.Errorf("last delay %v outside (0, %v]", last, tt.max)
			}
			if n := r.NumRequeues("a"); n != tt.calls {
				t.Errorf("NumRequeues = %d, want %d", n, tt.calls)
			}
			if d := r.When("b"); d != tt.base {
				t.Errorf("other item's first delay = %v, want base %v (backoff is per item)", d, tt.base)
			}
			r.Forget("a")
			if d := r.When("a"); d != tt.base {
				t.Errorf("delay after Forget = %v, want base %v", d, tt.base)
			}
		})
	}
}

func TestBucket(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBucket[string](10, 3, fc)
	var got []time.Duration
	for range 5 {
		got = append(got, b.When("x"))
	}
	want := []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays from a burst of 3 at 10 qps (-want +got):\n%s", diff)
	}
	// Two reservations are outstanding (-2 tokens); one second refills 10, capped at burst 3.
	fc.Step(time.Second)
	got = got[:0]
	for range 4 {
		got = append(got, b.When("y"))
	}
	want = []time.Duration{0, 0, 0, 100 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays after refill (-want +got):\n%s", diff)
	}
}

func TestMaxOf(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	r := MaxOf[string](NewItemExponential[string](time.Millisecond, time.Hour), NewBucket[string](1, 1, fc))
	tests := []struct {
		name string
		item string
		want time.Duration
	}{
		{"bucket has a token, exponential wins", "a", time.Millisecond},
		{"bucket empty, bucket wins", "b", time.Second},
		{"bucket further behind", "a", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.When(tt.item); got != tt.want {
				t.Errorf("When(%q) = %v, want %v", tt.item, got, tt.want)
			}
		})
	}
	if n := r.NumRequeues("a"); n != 2 {
		t.Errorf("NumRequeues(a) = %d, want 2", n)
	}
	r.Forget("a")
	if n := r.NumRequeues("a"); n != 0 {
		t.Errorf("NumRequeues(a) after Forget = %d, want 0", n)
	}
}
