package clusterroleaggregation

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
)

// TestReconcile follows the view role through its writes: given the rules of the role it
// selects, left alone once it has them, given them again when that role changes; an update
// from a stale cache is a Conflict, returned to be retried.
func TestReconcile(t *testing.T) {
	inf := informer.New(informer.Config{Name: "clusterroles"})
	w := fake.New(func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} })
	c := New(Config{ClusterRoleInformer: inf, ClusterRoles: w})
	cache := func(event watch.EventType, obj runtime.Object) {
		t.Helper()
		if _, err := inf.Apply(event, obj); err != nil {
			t.Fatal(err)
		}
	}
	// stored brings the writer's role to the cache, as the bus would.
	stored := func(name string) *rbacv1.ClusterRole {
		t.Helper()
		r, ok := w.Object("", name)
		if !ok {
			t.Fatalf("no clusterrole %s stored", name)
		}
		cache(watch.Modified, r)
		return r
	}
	reconcile := func() error {
		t.Helper()
		res, err := c.Reconcile(t.Context(), "view")
		if res.RequeueAfter != 0 {
			t.Errorf("requeue after %v, want none", res.RequeueAfter)
		}
		return err
	}

	view := w.Put(aggregated("view", nil, matching(toView)))
	pods := w.Put(role("pods-view", toView, rule("get", "pods")))
	cache(watch.Added, view)
	cache(watch.Added, pods)
	cache(watch.Added, w.Put(role("plain", nil, rule("*", "*"))))
	if diff := cmp.Diff([]string{"view"}, c.keys()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}

	if err := reconcile(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]rbacv1.PolicyRule{rule("get", "pods")}, stored("view").Rules); diff != "" {
		t.Errorf("aggregated rules (-want +got):\n%s", diff)
	}
	if err := reconcile(); err != nil {
		t.Fatal(err)
	}
	if n := len(w.CallsOf(fake.VerbUpdate)); n != 1 {
		t.Errorf("nothing changed: %d updates, want the first alone", n)
	}

	pods = pods.DeepCopy()
	pods.Rules = append(pods.Rules, rule("list", "pods"))
	cache(watch.Modified, w.Put(pods))
	if err := reconcile(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]rbacv1.PolicyRule{rule("get", "pods"), rule("list", "pods")}, stored("view").Rules); diff != "" {
		t.Errorf("rules after the change (-want +got):\n%s", diff)
	}

	// Someone else writes view; the cache has not seen it when pods-view changes again.
	other, _ := w.Object("", "view")
	other = other.DeepCopy()
	other.Labels = map[string]string{"touched": "yes"}
	w.Put(other)
	pods = pods.DeepCopy()
	pods.Rules = pods.Rules[:1]
	cache(watch.Modified, w.Put(pods))
	if err := reconcile(); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("update from a stale cache: err = %v, want a Conflict", err)
	}
	stored("view")
	if err := reconcile(); err != nil {
		t.Fatal(err)
	}
	got := stored("view")
	if diff := cmp.Diff([]rbacv1.PolicyRule{rule("get", "pods")}, got.Rules); diff != "" {
		t.Errorf("rules after the retry (-want +got):\n%s", diff)
	}
	if got.Labels["touched"] != "yes" {
		t.Error("the retry lost the other writer's change")
	}

	cache(watch.Deleted, got)
	if err := reconcile(); err != nil {
		t.Errorf("a deleted role: %v, want done", err)
	}
}
