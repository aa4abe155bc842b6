package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// fed is a fake writer whose writes reach an informer, as the bus would bring them, and are
// logged in words (say) in the order of all writers' writes. A delete with a grace period
// marks the object deleted, as the apiserver does until the kubelet has stopped the pod.
type fed[T runtime.Object] struct {
	*fake.Writer[T]
	inf *informer.Informer
	log *writeLog
	say func(verb string, obj T, grace *int64) string
}

type writeLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *writeLog) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (f fed[T]) seen(verb string, event watch.EventType, obj T, grace *int64) error {
	f.log.mu.Lock()
	f.log.calls = append(f.log.calls, f.say(verb, obj, grace))
	f.log.mu.Unlock()
	_, err := f.inf.Apply(event, obj.DeepCopyObject())
	return err
}

func (f fed[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out, err := f.Writer.Update(ctx, obj, opts)
	if err != nil {
		return out, err
	}
	return out, f.seen(fake.VerbUpdate, watch.Modified, out, nil)
}

func (f fed[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out, err := f.Writer.UpdateStatus(ctx, obj, opts)
	if err != nil {
		return out, err
	}
	return out, f.seen(fake.VerbUpdateStatus, watch.Modified, out, nil)
}

func (f fed[T]) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	obj, _ := f.Object(namespace, name)
	if err := f.Writer.Delete(ctx, namespace, name, opts); err != nil {
		return err
	}
	if g := opts.GracePeriodSeconds; g != nil && *g == 0 {
		return f.seen(fake.VerbDelete, watch.Deleted, obj, g)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	now := metav1.Now()
	m.SetDeletionTimestamp(&now)
	return f.seen(fake.VerbDelete, watch.Modified, f.Put(obj), opts.GracePeriodSeconds)
}

// fakes are the controller's writers over the test's informers.
type fakes struct {
	nodes *fake.Writer[*corev1.Node]
	pods  *fake.Writer[*corev1.Pod]
	log   writeLog
}

func newFakes() *fakes {
	return &fakes{
		nodes: fake.New(func() *corev1.Node { return &corev1.Node{} }),
		pods:  fake.New(func() *corev1.Pod { return &corev1.Pod{} }),
	}
}

func (f *fakes) Calls() []string { return f.log.Calls() }

// with is cfg writing through the fakes, into its informers.
func (f *fakes) with(cfg Config) Config {
	cfg.Nodes = fed[*corev1.Node]{Writer: f.nodes, inf: cfg.NodeInformer, log: &f.log, say: func(verb string, node *corev1.Node, _ *int64) string {
		if verb == fake.VerbUpdateStatus {
			return "status " + node.Name + " Ready=" + string(readyStatus(node))
		}
		var taints []string
		for _, t := range node.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		return fmt.Sprintf("taints %s %v", node.Name, taints)
	}}
	cfg.Pods = fed[*corev1.Pod]{Writer: f.pods, inf: cfg.PodInformer, log: &f.log, say: func(verb string, pod *corev1.Pod, grace *int64) string {
		switch {
		case verb == fake.VerbUpdateStatus:
			return "notready " + pod.Name
		case grace != nil && *grace == 0:
			return "force-delete " + pod.Name
		default:
			return "evict " + pod.Name
		}
	}}
	return cfg
}

type testInformers struct{ nodes, leases, pods *informer.Informer }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestControllerLifecycle drives one node through losing its kubelet, eviction, recovery and
// deletion, on a fake clock, checking the writes in order.
func TestControllerLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fc := clock.NewFake(t0)
	api := newFakes()
	node := api.nodes.Put(readyNode("n1"))
	l := lease(t0)
	l.ResourceVersion = "1"
	p := api.pods.Put(pod("a"))

	infs := &testInformers{}
	mk := func(name string, idx informer.Indexers, objs ...runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: informertest.Fixed(objs...), NoWatch: true, RelistPeriod: time.Hour, Indexers: idx})
	}
	infs.nodes = mk("nodes", nil, node)
	infs.leases = mk("leases", nil, l)
	infs.pods = mk("pods", informer.Indexers{"node": func(obj runtime.Object) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}, p)
	rec := record.NewFake(100)
	c := New(api.with(Config{
		Settings:      settings,
		MonitorPeriod: time.Hour, // the requeue timers alone must do the job
		NodeInformer:  infs.nodes, LeaseInformer: infs.leases, PodInformer: infs.pods, PodNodeIndex: "node",
		Recorder: rec, Clock: fc,
	}))
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{infs.nodes, infs.leases, infs.pods, c} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	// Healthy: the node is looked at, nothing is written, and a timer waits for the expiry
	// (the monitor's hour-long timer plus the 40 s requeue).
	eventually(t, "the expiry timer", func() bool { return fc.Waiters() >= 2 })
	if calls := api.Calls(); len(calls) != 0 {
		t.Fatalf("healthy node: want no writes, got %v", calls)
	}

	fc.Step(41 * time.Second)
	wantLost := []string{
		"status n1 Ready=Unknown",
		"taints n1 [" + TaintUnreachable + ":NoSchedule " + TaintUnreachable + ":NoExecute]",
		"notready a",
	}
	eventually(t, "the node marked unreachable", func() bool { return len(api.Calls()) >= len(wantLost) })
	if diff := cmp.Diff(wantLost, api.Calls()); diff != "" {
		t.Fatalf("writes when the lease expired (-want +got):\n%s", diff)
	}
	if got, want := <-rec.Events, "Normal NodeNotReady Node n1 status is now: NodeNotReady"; got != want {
		t.Errorf("event = %q, want %q", got, want)
	}

	// The pod's default toleration (300 s) runs from the taint.
	eventually(t, "the eviction timer", func() bool { return fc.Waiters() >= 2 })
	fc.Step(299 * time.Second)
	fc.Step(2 * time.Second)
	eventually(t, "the eviction", func() bool { return slices.Contains(api.Calls(), "evict a") })

	// The kubelet comes back: a fresh lease removes the taints.
	fresh := lease(fc.Now())
	fresh.ResourceVersion = "5000"
	if _, err := infs.leases.Apply(watch.Modified, fresh); err != nil {
		t.Fatal(err)
	}
	eventually(t, "taints removed", func() bool { return slices.Contains(api.Calls(), "taints n1 []") })

	// The node is deleted: its pods go at once, without grace.
	if err := api.nodes.Delete(t.Context(), "", "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone, _ := infs.nodes.Store().Get("n1")
	goneNode := gone.(*corev1.Node).DeepCopy()
	goneNode.ResourceVersion = "6000"
	if _, err := infs.nodes.Apply(watch.Deleted, goneNode); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pods of the deleted node deleted", func() bool { return slices.Contains(api.Calls(), "force-delete a") })
	if _, ok := infs.pods.Store().Get("default/a"); ok {
		t.Error("pod a is still in the cache after the force delete")
	}
}

// TestMissingNodeInCacheButNotInAPI checks that pods are never force-deleted on the cache's
// word alone: a node the apiserver still has keeps its pods.
func TestMissingNodeInCacheButNotInAPI(t *testing.T) {
	infs := &testInformers{}
	api := newFakes()
	api.nodes.Put(readyNode("n1"))
	p := api.pods.Put(pod("a"))
	infs.pods = informer.New(informer.Config{Name: "pods", ListerWatcher: informertest.Fixed(p), NoWatch: true, Indexers: informer.Indexers{"node": func(obj runtime.Object) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}})
	infs.nodes = informer.New(informer.Config{Name: "nodes", ListerWatcher: informertest.Fixed(), NoWatch: true})
	infs.leases = informer.New(informer.Config{Name: "leases", ListerWatcher: informertest.Fixed(), NoWatch: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, inf := range []*informer.Informer{infs.nodes, infs.leases, infs.pods} {
		go func() { _ = inf.Start(ctx) }()
	}
	if !informer.WaitForSync(ctx, infs.pods.HasSynced) {
		t.Fatal("pods informer did not sync")
	}
	c := New(api.with(Config{Settings: settings, NodeInformer: infs.nodes, LeaseInformer: infs.leases, PodInformer: infs.pods,
		PodNodeIndex: "node", Recorder: record.NewFake(10), Clock: clock.NewFake(t0)}))
	if _, err := c.sync(ctx, "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if calls := api.Calls(); len(calls) != 0 {
		t.Errorf("node still in the API: want no writes, got %v", calls)
	}
	if err := api.nodes.Delete(ctx, "", "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sync(ctx, "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if diff := cmp.Diff([]string{"force-delete a"}, api.Calls()); diff != "" {
		t.Errorf("node gone from the API (-want +got):\n%s", diff)
	}
}
