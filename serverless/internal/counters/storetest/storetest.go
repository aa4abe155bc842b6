// Package storetest is the contract suite every counters.Store passes: the in-memory one in
// unit tests, the Redis one against a real server.
package storetest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/serverless/internal/counters"
)

// Factory returns a fresh, empty store and registers its cleanup with t.
type Factory func(t *testing.T) counters.Store

// Run runs the suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	t.Run("SumsGatewaysPerSecond", func(t *testing.T) { testSums(t, newStore(t)) })
	t.Run("LastCallOnlyRises", func(t *testing.T) { testLastCall(t, newStore(t)) })
	t.Run("RecordersShareOneView", func(t *testing.T) { testRecorders(t, newStore(t)) })
}

// fnKey is a function key no other run uses.
func fnKey(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "storetest/" + hex.EncodeToString(b)
}

func testSums(t *testing.T, s counters.Store) {
	ctx := t.Context()
	fn, other := fnKey(t), fnKey(t)
	gw1 := counters.Batch{Buckets: map[string][]counters.Bucket{
		fn:    {{Second: 100, Started: 2, Concurrency: 0.5}, {Second: 101, Concurrency: 1}},
		other: {{Second: 100, Started: 7}},
	}}
	gw2 := counters.Batch{Buckets: map[string][]counters.Bucket{
		fn: {{Second: 101, Started: 3, Concurrency: 2.25}, {Second: 103, Started: 1, Concurrency: 0.125}},
	}}
	for _, b := range []counters.Batch{gw1, gw2} {
		if err := s.Add(ctx, b); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	got, err := s.Buckets(ctx, fn, 99, 103)
	if err != nil {
		t.Fatalf("Buckets: %v", err)
	}
	want := []counters.Bucket{
		{Second: 100, Started: 2, Concurrency: 0.5},
		{Second: 101, Started: 3, Concurrency: 3.25},
		{Second: 103, Started: 1, Concurrency: 0.125},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets of %s (-want +got):\n%s", fn, diff)
	}
	got, err = s.Buckets(ctx, fn, 101, 102)
	if err != nil {
		t.Fatalf("Buckets: %v", err)
	}
	if diff := cmp.Diff(want[1:2], got); diff != "" {
		t.Errorf("buckets 101..102 (-want +got):\n%s", diff)
	}
	got, err = s.Buckets(ctx, other, 100, 100)
	if err != nil {
		t.Fatalf("Buckets: %v", err)
	}
	if diff := cmp.Diff([]counters.Bucket{{Second: 100, Started: 7}}, got); diff != "" {
		t.Errorf("buckets of %s (-want +got):\n%s", other, diff)
	}
}

func testLastCall(t *testing.T, s counters.Store) {
	ctx := t.Context()
	fn, never := fnKey(t), fnKey(t)
	t0 := time.UnixMilli(1_700_000_000_123)
	for _, at := range []time.Time{t0, t0.Add(-time.Minute), t0.Add(-time.Second)} {
		if err := s.Add(ctx, counters.Batch{LastCalls: map[string]time.Time{fn: at}}); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	got, err := s.LastCalls(ctx, []string{fn, never})
	if err != nil {
		t.Fatalf("LastCalls: %v", err)
	}
	if diff := cmp.Diff(map[string]time.Time{fn: t0}, got, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Errorf("last calls (-want +got):\n%s", diff)
	}
	if err := s.Add(ctx, counters.Batch{LastCalls: map[string]time.Time{fn: t0.Add(time.Second)}}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	got, err = s.LastCalls(ctx, []string{fn})
	if err != nil {
		t.Fatalf("LastCalls: %v", err)
	}
	if !got[fn].Equal(t0.Add(time.Second)) {
		t.Errorf("last call after a later one = %v, want %v", got[fn], t0.Add(time.Second))
	}
	if err := s.Forget(ctx, fn); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	got, err = s.LastCalls(ctx, []string{fn})
	if err != nil {
		t.Fatalf("LastCalls: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("last calls after Forget = %v, want none", got)
	}
}

// testRecorders runs two gateways' recorders on a fake clock against the store: each tallies
// its own calls and the store holds the sum.
func testRecorders(t *testing.T, s counters.Store) {
	ctx := t.Context()
	fn := fnKey(t)
	base := time.Unix(1_700_000_000, 0)
	var gw1, gw2 counters.Tally
	// gw1: one call over [0.5 s, 2.5 s); gw2: two calls over [1.0 s, 1.5 s).
	gw1.Begin(fn, base.Add(500*time.Millisecond))
	gw2.Begin(fn, base.Add(time.Second))
	gw2.Begin(fn, base.Add(time.Second))
	gw2.End(fn, base.Add(1500*time.Millisecond))
	gw2.End(fn, base.Add(1500*time.Millisecond))
	gw1.End(fn, base.Add(2500*time.Millisecond))
	for _, b := range []counters.Batch{gw1.Seal(base.Add(3*time.Second), false), gw2.Seal(base.Add(3*time.Second), false)} {
		if err := s.Add(ctx, b); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	got, err := s.Buckets(ctx, fn, base.Unix(), base.Unix()+3)
	if err != nil {
		t.Fatalf("Buckets: %v", err)
	}
	sec := base.Unix()
	want := []counters.Bucket{
		{Second: sec, Started: 1, Concurrency: 0.5},
		{Second: sec + 1, Started: 2, Concurrency: 2},
		{Second: sec + 2, Concurrency: 0.5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	last, err := s.LastCalls(ctx, []string{fn})
	if err != nil {
		t.Fatalf("LastCalls: %v", err)
	}
	if !last[fn].Equal(base.Add(time.Second)) {
		t.Errorf("last call = %v, want %v", last[fn], base.Add(time.Second))
	}
}
