package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// fakeAPI records the controller's writes and feeds them back into the informers, as the bus
// would, with increasing resourceVersions.
type fakeAPI struct {
	mu    sync.Mutex
	rv    int
	calls []string
	nodes map[string]*corev1.Node // what the "apiserver" holds, for GetNode
	infs  *testInformers
}

func (f *fakeAPI) nextRV() string {
	f.rv++
	return strconv.Itoa(1000 + f.rv)
}

func (f *fakeAPI) record(call string) {
	f.calls = append(f.calls, call)
}

func (f *fakeAPI) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAPI) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		return n.DeepCopy(), nil
	}
	return nil, apierror.New(apierror.ErrNotFound, "node %q not found", name)
}

func (f *fakeAPI) UpdateNodeStatus(_ context.Context, node *corev1.Node) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("status " + node.Name + " Ready=" + string(readyStatus(node)))
	return f.storeNode(node)
}

func (f *fakeAPI) UpdateNode(_ context.Context, node *corev1.Node) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var taints []string
	for _, t := range node.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	f.record(fmt.Sprintf("taints %s %v", node.Name, taints))
	return f.storeNode(node)
}

func (f *fakeAPI) storeNode(node *corev1.Node) (*corev1.Node, error) {
	out := node.DeepCopy()
	out.ResourceVersion = f.nextRV()
	f.nodes[out.Name] = out
	if _, err := f.infs.nodes.Apply(watch.Modified, out.DeepCopy()); err != nil {
		return nil, err
	}
	return out, nil
}

func (f *fakeAPI) UpdatePodStatus(_ context.Context, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("notready " + pod.Name)
	out := pod.DeepCopy()
	out.ResourceVersion = f.nextRV()
	_, err := f.infs.pods.Apply(watch.Modified, out)
	return err
}

func (f *fakeAPI) DeletePod(_ context.Context, namespace, name string, uid k8stypes.UID, grace *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.infs.pods.Store().Get(namespace + "/" + name)
	if !ok {
		return apierror.New(apierror.ErrNotFound, "pod %q not found", name)
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	if pod.UID != uid {
		return apierror.New(apierror.ErrConflict, "uid precondition failed")
	}
	pod.ResourceVersion = f.nextRV()
	if grace != nil && *grace == 0 {
		f.record("force-delete " + name)
		_, err := f.infs.pods.Apply(watch.Deleted, pod)
		return err
	}
	f.record("evict " + name)
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	_, err := f.infs.pods.Apply(watch.Modified, pod)
	return err
}

type testInformers struct{ nodes, leases, pods *informer.Informer }

func listOf(objs ...runtime.Object) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			switch {
			case len(objs) == 0:
				return &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
			}
			list := &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for _, o := range objs {
				list.Items = append(list.Items, runtime.RawExtension{Object: o.DeepCopyObject()})
			}
			return list, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, fmt.Errorf("no watch in this test")
		},
	}
}

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
	node := readyNode("n1")
	node.ResourceVersion = "1"
	l := lease(t0)
	l.ResourceVersion = "1"
	p := pod("a")
	p.ResourceVersion = "1"

	infs := &testInformers{}
	mk := func(name string, idx informer.Indexers, objs ...runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: listOf(objs...), NoWatch: true, RelistPeriod: time.Hour, Indexers: idx})
	}
	infs.nodes = mk("nodes", nil, node)
	infs.leases = mk("leases", nil, l)
	infs.pods = mk("pods", informer.Indexers{"node": func(obj runtime.Object) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}, p)
	api := &fakeAPI{nodes: map[string]*corev1.Node{"n1": node.DeepCopy()}, infs: infs}
	rec := record.NewFake(100)
	c := New(Config{
		Settings:      settings,
		MonitorPeriod: time.Hour, // the requeue timers alone must do the job
		Nodes:         infs.nodes, Leases: infs.leases, Pods: infs.pods, PodNodeIndex: "node",
		API: api, Recorder: rec, Clock: fc,
	})
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
	api.mu.Lock()
	delete(api.nodes, "n1")
	api.mu.Unlock()
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
	p := pod("a")
	p.ResourceVersion = "1"
	infs.pods = informer.New(informer.Config{Name: "pods", ListerWatcher: listOf(p), NoWatch: true, Indexers: informer.Indexers{"node": func(obj runtime.Object) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}})
	infs.nodes = informer.New(informer.Config{Name: "nodes", ListerWatcher: listOf(), NoWatch: true})
	infs.leases = informer.New(informer.Config{Name: "leases", ListerWatcher: listOf(), NoWatch: true})
	api := &fakeAPI{nodes: map[string]*corev1.Node{"n1": readyNode("n1")}, infs: infs}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, inf := range []*informer.Informer{infs.nodes, infs.leases, infs.pods} {
		go func() { _ = inf.Start(ctx) }()
	}
	if !informer.WaitForSync(ctx, infs.pods.HasSynced) {
		t.Fatal("pods informer did not sync")
	}
	c := New(Config{Settings: settings, Nodes: infs.nodes, Leases: infs.leases, Pods: infs.pods, PodNodeIndex: "node",
		API: api, Recorder: record.NewFake(10), Clock: clock.NewFake(t0)})
	if _, err := c.sync(ctx, "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if calls := api.Calls(); len(calls) != 0 {
		t.Errorf("node still in the API: want no writes, got %v", calls)
	}
	api.nodes = map[string]*corev1.Node{}
	if _, err := c.sync(ctx, "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if diff := cmp.Diff([]string{"force-delete a"}, api.Calls()); diff != "" {
		t.Errorf("node gone from the API (-want +got):\n%s", diff)
	}
}
