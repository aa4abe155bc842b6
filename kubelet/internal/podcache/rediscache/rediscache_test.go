package rediscache_test

import (
	"testing"

	"minik8s.io/kubelet/internal/podcache"
	"minik8s.io/kubelet/internal/podcache/podcachetest"
	"minik8s.io/kubelet/internal/podcache/rediscache"
	"minik8s.io/shared/redistest"
)

func TestContract(t *testing.T) {
	rdb := redistest.Client(t)
	podcachetest.Run(t, func(t *testing.T) podcache.Cache { return rediscache.New(rdb, redistest.Prefix(t, rdb, "podcache")) })
}

func TestLayout(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb, "podcache")
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
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb, "podcache")
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
