package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"minik8s.io/serverless/internal/counters"
	"minik8s.io/serverless/internal/counters/redisstore"
	"minik8s.io/serverless/internal/counters/storetest"
)

// requireRedis connects to $MINIK8S_REDIS_ADDR (default 127.0.0.1:6379, make up's). It skips
// under -short and fails with a clear message when Redis does not answer.
func requireRedis(t *testing.T) *redis.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Redis; skipped under -short")
	}
	addr := os.Getenv("MINIK8S_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s is unreachable (%v): start it (make up) or set MINIK8S_REDIS_ADDR; run with -short to skip", addr, err)
	}
	return rdb
}

// newStore returns a store under a prefix of its own, whose keys are deleted when t ends.
func newStore(t *testing.T, rdb *redis.Client, ttl time.Duration) *redisstore.Store {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "minik8s:test:counters:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Errorf("find test keys under %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("delete test keys: %v", err)
			}
		}
	})
	return redisstore.New(rdb, prefix, ttl)
}

func TestContract(t *testing.T) {
	rdb := requireRedis(t)
	storetest.Run(t, func(t *testing.T) counters.Store { return newStore(t, rdb, 0) })
}

// TestBucketsExpire: a bucket key carries the store's time to live.
func TestBucketsExpire(t *testing.T) {
	rdb := requireRedis(t)
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
	rdb := requireRedis(t)
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
