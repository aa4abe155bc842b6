package rbac

import (
	"context"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

func TestDecisionCache(t *testing.T) {
	ctx := context.Background()
	roles := []*rbacv1.ClusterRole{clusterRole("reader", rule("get", "", "pods", ""))}
	policy := NewStatic(nil, nil, roles, nil)
	c := NewDecisionCache(New(policy, policy, policy))
	jane := authorizer.User{Name: "jane", Groups: []string{"dev"}}
	get := authorizer.Attributes{User: jane, Verb: "get", ResourceRequest: true, APIVersion: "v1", Namespace: "ns1", Resource: "pods", Name: "p"}

	if d, _, _ := c.Authorize(ctx, get); d != authorizer.NoOpinion {
		t.Fatalf("no binding: %v", d)
	}
	// The policy changes without the cache being told: the cached refusal still answers,
	// which shows that it is a cache.
	policy.BindingIndex = NewBindingIndex([]*rbacv1.ClusterRoleBinding{clusterRoleBinding("b", "reader", "Group:dev")}, nil)
	if d, _, _ := c.Authorize(ctx, get); d != authorizer.NoOpinion {
		t.Fatalf("cached refusal not served: %v", d)
	}
	// Another user (same name, other groups) and another request are other keys.
	other := get
	other.User = authorizer.User{Name: "jane"}
	if d, _, _ := c.Authorize(ctx, other); d != authorizer.NoOpinion {
		t.Errorf("jane without group dev: %v", d)
	}
	named := get
	named.Name = "q"
	if d, _, _ := c.Authorize(ctx, named); d != authorizer.Allow {
		t.Errorf("another name is another decision: %v", d)
	}

	c.Invalidate()
	d, reason, _ := c.Authorize(ctx, get)
	if d != authorizer.Allow || reason == "" {
		t.Fatalf("after invalidation: %v %q", d, reason)
	}
	// A cached allow keeps its reason.
	if d2, reason2, _ := c.Authorize(ctx, get); d2 != authorizer.Allow || reason2 != reason {
		t.Errorf("cached allow: %v %q, want %q", d2, reason2, reason)
	}
	policy.BindingIndex = NewBindingIndex(nil, nil)
	c.Invalidate()
	if d, _, _ := c.Authorize(ctx, get); d != authorizer.NoOpinion {
		t.Errorf("binding removed: %v", d)
	}
}

// TestDecisionCacheConcurrent runs decisions and invalidations together, for the race
// detector, and checks that a decision asked after the last invalidation sees the last policy.
func TestDecisionCacheConcurrent(t *testing.T) {
	ctx := context.Background()
	roles := []*rbacv1.ClusterRole{clusterRole("reader", rule("get", "", "pods", ""))}
	policy := NewStatic(nil, nil, roles, nil)
	allowing := NewBindingIndex([]*rbacv1.ClusterRoleBinding{clusterRoleBinding("b", "reader", "User:jane")}, nil)
	c := NewDecisionCache(New(policy, policy, policy))
	get := authorizer.Attributes{User: authorizer.User{Name: "jane"}, Verb: "get", ResourceRequest: true, Resource: "pods", Name: "p"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if d, _, _ := c.Authorize(ctx, get); d != authorizer.NoOpinion {
					t.Errorf("allowed before any binding: %v", d)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 500 {
			c.Invalidate()
		}
	}()
	wg.Wait()
	policy.BindingIndex = allowing
	c.Invalidate()
	if d, _, _ := c.Authorize(ctx, get); d != authorizer.Allow {
		t.Errorf("after the last invalidation: %v", d)
	}
}
