package counters

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestTallySeal(t *testing.T) {
	sec := t0.Unix()
	tests := []struct {
		name   string
		events func(*Tally)
		seal   time.Time
		all    bool
		want   map[string][]Bucket
		last   map[string]time.Time
		left   int // functions still tallied after the seal
	}{{
		name:   "nothing",
		events: func(*Tally) {},
		seal:   at(5000),
		want:   map[string][]Bucket{},
		last:   map[string]time.Time{},
	}, {
		name: "one call inside a second",
		events: func(ta *Tally) {
			ta.Begin("a/f", at(200))
			ta.End("a/f", at(450))
		},
		seal: at(1000),
		want: map[string][]Bucket{"a/f": {{Second: sec, Started: 1, Concurrency: 0.25}}},
		last: map[string]time.Time{"a/f": at(200)},
	}, {
		name: "a call spanning seconds counts in each, the current second stays open",
		events: func(ta *Tally) {
			ta.Begin("a/f", at(500))
		},
		seal: at(3250),
		want: map[string][]Bucket{"a/f": {
			{Second: sec, Started: 1, Concurrency: 0.5},
			{Second: sec + 1, Concurrency: 1},
			{Second: sec + 2, Concurrency: 1},
		}},
		last: map[string]time.Time{"a/f": at(500)},
		left: 1,
	}, {
		name: "overlapping calls add up; all takes the current second",
		events: func(ta *Tally) {
			ta.Begin("a/f", at(0))
			ta.Begin("a/f", at(0))
			ta.Begin("a/f", at(500))
			ta.End("a/f", at(500))
			ta.End("a/f", at(1000))
			ta.End("a/f", at(1250))
			ta.Begin("b/g", at(1100))
			ta.End("b/g", at(1200))
		},
		seal: at(1500),
		all:  true,
		want: map[string][]Bucket{
			"a/f": {{Second: sec, Started: 3, Concurrency: 2}, {Second: sec + 1, Concurrency: 0.25}},
			"b/g": {{Second: sec + 1, Started: 1, Concurrency: 0.1}},
		},
		last: map[string]time.Time{"a/f": at(500), "b/g": at(1100)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ta Tally
			tt.events(&ta)
			b := ta.Seal(tt.seal, tt.all)
			if diff := cmp.Diff(tt.want, b.Buckets, cmp.Comparer(approx)); diff != "" {
				t.Errorf("buckets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.last, b.LastCalls); diff != "" {
				t.Errorf("last calls (-want +got):\n%s", diff)
			}
			if len(ta.fns) != tt.left {
				t.Errorf("functions left = %d, want %d", len(ta.fns), tt.left)
			}
		})
	}
}

func approx(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestTallySealsOnce: a second is handed over once; a second seal has only what came after.
func TestTallySealsOnce(t *testing.T) {
	var ta Tally
	ta.Begin("a/f", at(100))
	first := ta.Seal(at(1500), false)
	second := ta.Seal(at(2500), false)
	if len(first.Buckets["a/f"]) != 1 || len(first.LastCalls) != 1 {
		t.Fatalf("first seal = %+v", first)
	}
	want := []Bucket{{Second: t0.Unix() + 1, Concurrency: 1}}
	if diff := cmp.Diff(want, second.Buckets["a/f"], cmp.Comparer(approx)); diff != "" {
		t.Errorf("second seal's buckets (-want +got):\n%s", diff)
	}
	if len(second.LastCalls) != 0 {
		t.Errorf("second seal's last calls = %v, want none (no new call)", second.LastCalls)
	}
	if got := ta.InFlight("a/f"); got != 1 {
		t.Errorf("in flight = %d, want 1", got)
	}
}

type failingStore struct {
	*Memory
	fail bool
}

func (f *failingStore) Add(ctx context.Context, b Batch) error {
	if f.fail {
		return errors.New("store down")
	}
	return f.Memory.Add(ctx, b)
}

// TestRecorderKeepsWhatFailed: a batch the store refused is written with the next flush.
func TestRecorderKeepsWhatFailed(t *testing.T) {
	store := &failingStore{Memory: NewMemory(), fail: true}
	r := NewRecorder(store, RecorderConfig{})
	end := r.Begin("a/f")
	end()
	if err := r.Flush(t.Context(), true); err == nil {
		t.Fatal("Flush with the store down: no error")
	}
	store.fail = false
	if err := r.Flush(t.Context(), true); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	last, _ := store.LastCalls(t.Context(), []string{"a/f"})
	if last["a/f"].IsZero() {
		t.Error("the last call of the failed flush was not written later")
	}
	now := time.Now().Unix()
	bs, _ := store.Buckets(t.Context(), "a/f", now-5, now+1)
	var started float64
	for _, b := range bs {
		started += b.Started
	}
	if started != 1 {
		t.Errorf("calls started in the store = %v, want 1 (buckets %+v)", started, bs)
	}
}

type countingStore struct {
	*Memory
	reads [][2]int64
}

func (c *countingStore) Buckets(ctx context.Context, fn string, from, to int64) ([]Bucket, error) {
	c.reads = append(c.reads, [2]int64{from, to})
	return c.Memory.Buckets(ctx, fn, from, to)
}

// TestReaderCachesSettledSeconds: a window read again reads only its newest seconds.
func TestReaderCachesSettledSeconds(t *testing.T) {
	ctx := t.Context()
	store := &countingStore{Memory: NewMemory()}
	_ = store.Add(ctx, Batch{Buckets: map[string][]Bucket{"a/f": {{Second: 10, Started: 1}, {Second: 19, Started: 2}}}})
	r := NewReader(store)
	got, err := r.Window(ctx, "a/f", 5, 20)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Bucket{{Second: 10, Started: 1}, {Second: 19, Started: 2}}, got); diff != "" {
		t.Errorf("first window (-want +got):\n%s", diff)
	}
	// A late write to second 19 (still settling) and one to 21; second 10 is cached.
	_ = store.Add(ctx, Batch{Buckets: map[string][]Bucket{"a/f": {{Second: 19, Started: 1}, {Second: 21, Started: 4}}}})
	got, err = r.Window(ctx, "a/f", 10, 22)
	if err != nil {
		t.Fatal(err)
	}
	want := []Bucket{{Second: 10, Started: 1}, {Second: 19, Started: 3}, {Second: 21, Started: 4}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second window (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][2]int64{{5, 20}, {18, 22}}, store.reads); diff != "" {
		t.Errorf("store reads (-want +got):\n%s", diff)
	}
	// The window moved past second 10.
	got, _ = r.Window(ctx, "a/f", 11, 22)
	if len(got) != 2 || got[0].Second != 19 {
		t.Errorf("window from 11 = %+v, want seconds 19 and 21", got)
	}
}
