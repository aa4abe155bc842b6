// Package redistest connects tests to a real Redis and gives each test keys of its own.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the Redis the tests use: $MINIK8S_REDIS_ADDR, default make up's 127.0.0.1:6379.
func Addr() string {
	if addr := os.Getenv("MINIK8S_REDIS_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:6379"
}

// Client connects to Addr, closed when the test ends. It skips under -short and fails with a
// clear message when Redis does not answer.
func Client(t *testing.T) *redis.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Redis; skipped under -short")
	}
	addr := Addr()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s is unreachable (%v): start it (make up) or set MINIK8S_REDIS_ADDR; run with -short to skip", addr, err)
	}
	return rdb
}

// Prefix is a key prefix no other test uses, under minik8s:test:<area>:; every key under it
// is deleted when the test ends.
func Prefix(t *testing.T, rdb *redis.Client, area string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "minik8s:test:" + area + ":" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		// The test's context is already done during cleanup.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Errorf("find test keys under %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("delete test keys under %s: %v", prefix, err)
			}
		}
	})
	return prefix
}
