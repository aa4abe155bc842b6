package app

import (
	"strconv"
	"testing"
	"time"

	"minik8s.io/apiserver/internal/authorizer"
)

// An accepted token is remembered for tokenTTL and no longer, and the cache stays bounded.
func TestTokenCache(t *testing.T) {
	var c tokenCache
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := c.get("t", now); ok {
		t.Fatal("a token never seen is cached")
	}
	c.put("t", authorizer.User{Name: "system:serviceaccount:a:b"}, now)
	if u, ok := c.get("t", now.Add(tokenTTL-time.Millisecond)); !ok || u.Name != "system:serviceaccount:a:b" {
		t.Fatalf("within its TTL: %v %v", u, ok)
	}
	if _, ok := c.get("t", now.Add(tokenTTL)); ok {
		t.Fatal("a token is taken past its TTL")
	}
	for i := range maxCachedTokens + 1 {
		c.put(strconv.Itoa(i), authorizer.User{Name: "u"}, now)
	}
	if len(c.m) > maxCachedTokens {
		t.Fatalf("%d tokens cached, bound %d", len(c.m), maxCachedTokens)
	}
}
