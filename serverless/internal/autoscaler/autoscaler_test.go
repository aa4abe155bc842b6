package autoscaler

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/serverless/internal/counters"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/workqueue/clock"
)

type fakeAPI struct {
	mu      sync.Mutex
	scales  []string
	patches []string
}

func (f *fakeAPI) ScaleDeployment(_ context.Context, ns, name string, n int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scales = append(f.scales, ns+"/"+name+"="+itoa(n))
	return nil
}

func (f *fakeAPI) PatchFunctionStatus(_ context.Context, ns, name string, n int32, last *time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := ns + "/" + name + " desired=" + itoa(n)
	if last != nil {
		p += " lastCall=" + last.UTC().Format(time.RFC3339)
	}
	f.patches = append(f.patches, p)
	return nil
}

func (f *fakeAPI) take() (scales, patches []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	scales, patches, f.scales, f.patches = f.scales, f.patches, nil, nil
	return scales, patches
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

type env struct {
	a     *Autoscaler
	api   *fakeAPI
	store *counters.Memory
	clk   *clock.Fake
	fns   *informer.Informer
	deps  *informer.Informer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		api: &fakeAPI{}, store: counters.NewMemory(), clk: clock.NewFake(t0),
		fns:  informer.New(informer.Config{Name: "functions"}),
		deps: informer.New(informer.Config{Name: "deployments"}),
	}
	e.a = New(Config{Functions: e.fns, Deployments: e.deps, Counts: counters.NewReader(e.store), API: e.api, Clock: e.clk})
	return e
}

func apply(t *testing.T, inf *informer.Informer, typ watch.EventType, obj runtime.Object) {
	t.Helper()
	if _, err := inf.Apply(typ, obj); err != nil {
		t.Fatalf("apply %v: %v", typ, err)
	}
}

func function(name string, rv string, sc serverlessv1.FunctionScale) *serverlessv1.Function {
	return &serverlessv1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv},
		Spec:       serverlessv1.FunctionSpec{Handler: "main.handle", Scale: sc},
	}
}

func deployment(name, rv string, replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func ptr[T any](v T) *T { return &v }

func TestActivationScalesFromZeroAtOnce(t *testing.T) {
	e := newEnv(t)
	apply(t, e.fns, watch.Added, function("add", "1", serverlessv1.FunctionScale{}))
	apply(t, e.deps, watch.Added, deployment("add", "1", 0, 0))
	e.a.DecideAll(t.Context())
	if scales, patches := e.api.take(); len(scales) != 0 || len(patches) != 0 {
		t.Fatalf("idle function at zero: scales %v patches %v, want none", scales, patches)
	}
	e.a.Activate("default", "add")
	e.a.decideActivated(t.Context())
	scales, patches := e.api.take()
	if diff := cmp.Diff([]string{"default/add=1"}, scales); diff != "" {
		t.Errorf("scales (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"default/add desired=1 lastCall=" + t0.UTC().Format(time.RFC3339)}, patches); diff != "" {
		t.Errorf("status patches (-want +got):\n%s", diff)
	}
}

func TestLoopScalesOnCountsAndForgetsDeleted(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	apply(t, e.fns, watch.Added, function("add", "1", serverlessv1.FunctionScale{TargetConcurrency: ptr[int32](5)}))
	apply(t, e.fns, watch.Added, function("building", "1", serverlessv1.FunctionScale{}))
	apply(t, e.deps, watch.Added, deployment("add", "1", 1, 1))
	// Gateways saw 20 calls in flight for the last 6 seconds.
	var bs []counters.Bucket
	for s := t0.Unix() - 6; s < t0.Unix(); s++ {
		bs = append(bs, counters.Bucket{Second: s, Started: 20, Concurrency: 20})
	}
	_ = e.store.Add(ctx, counters.Batch{
		Buckets:   map[string][]counters.Bucket{"default/add": bs, "default/building": bs},
		LastCalls: map[string]time.Time{"default/add": t0.Add(-time.Second), "default/building": t0.Add(-time.Second)},
	})
	e.a.DecideAll(ctx)
	scales, patches := e.api.take()
	// 20 in flight over the 6 s panic window against 5 per pod: 4 pods, in panic. The function
	// with no Deployment yet is left alone.
	if diff := cmp.Diff([]string{"default/add=4"}, scales); diff != "" {
		t.Errorf("scales (-want +got):\n%s", diff)
	}
	want := "default/add desired=4 lastCall=" + t0.Add(-time.Second).UTC().Format(time.RFC3339)
	if diff := cmp.Diff([]string{want}, patches); diff != "" {
		t.Errorf("status patches (-want +got):\n%s", diff)
	}
	if !e.a.states["default/add"].Panicking() {
		t.Error("not in panic after a burst to four times the ready pods")
	}

	// Status and Deployment caught up: nothing to write.
	fn := function("add", "2", serverlessv1.FunctionScale{TargetConcurrency: ptr[int32](5)})
	fn.Status.DesiredReplicas = 4
	fn.Status.LastCallTime = &metav1.Time{Time: t0.Add(-time.Second)}
	apply(t, e.fns, watch.Modified, fn)
	apply(t, e.deps, watch.Modified, deployment("add", "2", 4, 4))
	e.clk.Step(2 * time.Second)
	e.a.DecideAll(ctx)
	if scales, patches := e.api.take(); len(scales) != 0 || len(patches) != 0 {
		t.Errorf("nothing changed: scales %v patches %v, want none", scales, patches)
	}

	apply(t, e.fns, watch.Deleted, fn)
	e.a.DecideAll(ctx)
	if _, ok := e.a.states["default/add"]; ok {
		t.Error("state of a deleted function kept")
	}
	last, _ := e.store.LastCalls(ctx, []string{"default/add", "default/building"})
	if got := slices.Sorted(mapKeys(last)); !slices.Equal(got, []string{"default/building"}) {
		t.Errorf("last calls kept for %v, want only default/building", got)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
