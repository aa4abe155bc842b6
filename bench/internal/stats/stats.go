package stats

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Summary describes a set of latency samples.
type Summary struct {
	N    int
	Mean time.Duration
	P50  time.Duration
	P90  time.Duration
	P99  time.Duration
	Max  time.Duration
}

// Summarize computes a Summary; it sorts a copy, so samples may still be in
// use. An empty input gives the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		Mean: sum / time.Duration(len(s)),
		P50:  Percentile(s, 50),
		P90:  Percentile(s, 90),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile of sorted samples: the
// smallest sample at or below which p percent of them lie. Nearest rank, not
// interpolation, so the figure is always a latency that really happened.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// String renders the summary in milliseconds for logs.
func (s Summary) String() string {
	return fmt.Sprintf("n=%d mean=%s p50=%s p99=%s max=%s", s.N, Millis(s.Mean), Millis(s.P50), Millis(s.P99), Millis(s.Max))
}

// Millis formats d as milliseconds with two decimals, the unit of every table.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// Recorder collects samples from many goroutines.
type Recorder struct {
	mu      sync.Mutex
	samples []time.Duration
}

// NewRecorder preallocates room for n samples, so recording never allocates
// in the measured loop.
func NewRecorder(n int) *Recorder {
	return &Recorder{samples: make([]time.Duration, 0, n)}
}

// Add records one sample.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	r.samples = append(r.samples, d)
	r.mu.Unlock()
}

// Len is the number of samples so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.samples)
}

// Summary summarises the samples so far.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Summarize(r.samples)
}

// Rate is operations per second over elapsed; zero when nothing elapsed.
func Rate(ops int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(ops) / elapsed.Seconds()
}
