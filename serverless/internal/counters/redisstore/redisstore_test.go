package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"minik8s.io/serverless/internal/counters"
	"minik8s.io/serverless/internal/counters/redisstore"
	"minik8s.io/serverless/internal/counters/storetest"
	"minik8s.io/shared/redistest"
)

// newStore returns a store under a prefix of its own, whose keys are deleted when t ends.
func newStore(t *testing.T, rdb *redis.Client, ttl time.Duration) *redisstore.Store {
	t.Helper()
	return redisstore.New(rdb, redistest.Prefix(t, rdb, "counters"), ttl)
}

func TestContract(t *testing.T) {
	rdb := redistest.Client(t)
	storetest.Run(t, func(t *testing.T) counters.Store { return newStore(t, rdb, 0) })
}

// TestBucketsExpire: a bucket key carries the store's time to live.
func TestBucketsExpire(t *testing.T) {
	rdb := redistest.Client(t)
	s := newStore(t, rdb, 90*time.Second)
	ctx := t.Context()
	if err := s.Add(ctx, counters.Batch{Buckets: map[string][]counters.Bucket{"ns/fn": {{Second: 5, Started: 1}}}}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	keys, err := rdb.Keys(ctx, s.LastCallKey()[:len(s.LastCallKey())-len("lastcall")]+"calls:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("bucket keys = %v, %v; want one", keys, err)
	}
	ttl, err := rdb.TTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatalf("TTL %s: %v", keys[0], err)
	}
	if ttl <= 0 || ttl > 90*time.Second {
		t.Errorf("TTL of %s = %v, want within (0, 90s]", keys[0], ttl)
	}
}

// TestTwoGatewaysOneView: two gateways' recorders flush to one Redis in the background; the
// autoscaler's reader sees the calls of both, and the latest call of either.
func TestTwoGatewaysOneView(t *testing.T) {
	rdb := redistest.Client(t)
	s := newStore(t, rdb, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gw1 := counters.NewRecorder(s, counters.RecorderConfig{FlushInterval: 50 * time.Millisecond})
	gw2 := counters.NewRecorder(s, counters.RecorderConfig{FlushInterval: 50 * time.Millisecond})
	done := make(chan struct{}, 2)
	for _, r := range []*counters.Recorder{gw1, gw2} {
		go func() { _ = r.Start(ctx); done <- struct{}{} }()
	}
	start := time.Now()
	for i := range 30 {
		r := gw1
		if i%3 == 0 {
			r = gw2
		}
		end := r.Begin("ns/fn")
		time.Sleep(2 * time.Millisecond)
		end()
	}
	reader := counters.NewReader(s)
	deadline := time.Now().Add(30 * time.Second)
	for {
		bs, err := reader.Window(t.Context(), "ns/fn", start.Unix()-1, time.Now().Unix())
		if err != nil {
			t.Fatalf("Window: %v", err)
		}
		var started, inflight float64
		for _, b := range bs {
			started += b.Started
			inflight += b.Concurrency
		}
		if started == 30 {
			// 30 calls of at least 2 ms each: at least 0.06 call-seconds.
			if inflight < 0.06 {
				t.Errorf("call-seconds in flight = %v, want at least 0.06", inflight)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls started in Redis = %v, want 30 (buckets %+v)", started, bs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	last, err := reader.LastCalls(t.Context(), []string{"ns/fn"})
	if err != nil {
		t.Fatalf("LastCalls: %v", err)
	}
	if l := last["ns/fn"]; l.Before(start.Add(-time.Millisecond)) || l.After(time.Now()) {
		t.Errorf("last call %v, want within the test's calls (from %v)", l, start)
	}
	cancel()
	<-done
	<-done
}
