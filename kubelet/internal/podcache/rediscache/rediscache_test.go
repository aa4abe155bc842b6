package rediscache_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"minik8s.io/kubelet/internal/podcache"
	"minik8s.io/kubelet/internal/podcache/podcachetest"
	"minik8s.io/kubelet/internal/podcache/rediscache"
)

// requireRedis connects to $MINIK8S_REDIS_ADDR (default 127.0.0.1:6379). It skips under
// -short and fails with a clear message when Redis does not answer.
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

// testPrefix is a prefix no other test uses; every key under it is deleted when t ends.
func testPrefix(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "minik8s:test:podcache:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		// t.Context is already done during cleanup.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Errorf("find test keys under %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("delete test keys %v: %v", keys, err)
			}
		}
	})
	return prefix
}

func TestContract(t *testing.T) {
	rdb := requireRedis(t)
	podcachetest.Run(t, func(t *testing.T) podcache.Cache { return rediscache.New(rdb, testPrefix(t, rdb)) })
}

func TestLayout(t *testing.T) {
	rdb := requireRedis(t)
	prefix := testPrefix(t, rdb)
	c := rediscache.New(rdb, prefix)
	if err := c.Put(t.Context(), podcachetest.Pod("ns", "p", "12")); err != nil {
		t.Fatal(err)
	}
	rv, err := rdb.HGet(t.Context(), prefix+"rvs", "ns/p").Result()
	if err != nil || rv != "12" {
		t.Errorf("HGET %srvs ns/p = %q, %v; want \"12\"", prefix, rv, err)
	}
	if n, err := rdb.HLen(t.Context(), prefix+"pods").Result(); err != nil || n != 1 {
		t.Errorf("HLEN %spods = %d, %v; want 1", prefix, n, err)
	}
	if err := c.Delete(t.Context(), "ns", "p"); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(t.Context(), c.Keys()...).Result(); err != nil || n != 0 {
		t.Errorf("after deleting the only pod %d of %v exist (%v), want none", n, c.Keys(), err)
	}
}

func TestCorruptEntryIsReported(t *testing.T) {
	rdb := requireRedis(t)
	prefix := testPrefix(t, rdb)
	if err := rdb.HSet(t.Context(), prefix+"pods", "ns/p", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := rediscache.New(rdb, prefix).List(t.Context()); err == nil {
		t.Error("List of a corrupt entry succeeded, want an error")
	}
}

func TestNodePrefix(t *testing.T) {
	if got, want := rediscache.NodePrefix("node-1"), "minik8s:kubelet:node-1:"; got != want {
		t.Errorf("NodePrefix = %q, want %q", got, want)
	}
}
