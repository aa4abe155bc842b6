package stats

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestSummarize(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed, so Summarize must sort
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    Summary
	}{
		{name: "empty", samples: nil, want: Summary{}},
		{name: "one", samples: ms(7), want: Summary{N: 1, Mean: 7 * time.Millisecond, P50: 7 * time.Millisecond,
			P90: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{name: "two takes the lower as median", samples: ms(4, 2), want: Summary{N: 2, Mean: 3 * time.Millisecond,
			P50: 2 * time.Millisecond, P90: 4 * time.Millisecond, P99: 4 * time.Millisecond, Max: 4 * time.Millisecond}},
		{name: "1..100 reversed", samples: ms(hundred...), want: Summary{N: 100, Mean: 50500 * time.Microsecond,
			P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
		{name: "one outlier sets max and p99 of few samples", samples: ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 91),
			want: Summary{N: 10, Mean: 10 * time.Millisecond, P50: time.Millisecond, P90: time.Millisecond,
				P99: 91 * time.Millisecond, Max: 91 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.samples...)
			got := Summarize(tt.samples)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tt.samples); diff != "" {
				t.Errorf("Summarize modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	sorted := ms(10, 20, 30, 40)
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{25, 10 * time.Millisecond},
		{26, 20 * time.Millisecond},
		{50, 20 * time.Millisecond},
		{75, 30 * time.Millisecond},
		{99, 40 * time.Millisecond},
		{100, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("p%v", tt.p), func(t *testing.T) {
			if got := Percentile(sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				r.Add(time.Duration(g*100+i+1) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	got := r.Summary()
	want := Summary{N: 800, Mean: 400500 * time.Nanosecond, P50: 400 * time.Microsecond,
		P90: 720 * time.Microsecond, P99: 792 * time.Microsecond, Max: 800 * time.Microsecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summary mismatch (-want +got):\n%s", diff)
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		name    string
		ops     int
		elapsed time.Duration
		want    float64
	}{
		{"per second", 500, time.Second, 500},
		{"half second", 500, 500 * time.Millisecond, 1000},
		{"nothing elapsed", 10, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rate(tt.ops, tt.elapsed); got != tt.want {
				t.Errorf("Rate(%d, %v) = %v, want %v", tt.ops, tt.elapsed, got, tt.want)
			}
		})
	}
}

func BenchmarkRecorderAdd(b *testing.B) {
	r := NewRecorder(0)
	for i := 0; b.Loop(); i++ {
		r.Add(time.Duration(i))
	}
}
