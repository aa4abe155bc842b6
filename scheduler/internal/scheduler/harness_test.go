package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// harness is a Nomad-style test bed: a fake API holding pods, whose writes are fed back
// through the scheduler's handlers as the informers would, unless observe is off.
type harness struct {
	t        *testing.T
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	bindings map[string]string // pod -> node, in the order the API accepted them
	order    []string
	observe  bool
	bindErr  error
	events   *record.Fake
	s        *Scheduler
	leader   fixedLeader
}

type fixedLeader struct{ v *bool }

func (l fixedLeader) IsLeader() bool { return *l.v }

func newHarness(t *testing.T, strategy framework.Strategy, configure ...func(*Config)) *harness {
	yes := true
	h := &harness{t: t, pods: map[string]*corev1.Pod{}, bindings: map[string]string{}, observe: true,
		events: record.NewFake(100), leader: fixedLeader{&yes}}
	clk := clock.NewFake(time.Unix(1000, 0))
	q := queue.New(clk, 0, 0, nil)
	t.Cleanup(q.ShutDown)
	cfg := Config{API: h, Pods: h, Cache: cache.New(clk, 0), Queue: q, Strategy: strategy,
		Recorder: h.events, Leader: h.leader, Clock: clk}
	for _, c := range configure {
		c(&cfg)
	}
	h.s = New(cfg)
	return h
}

func (h *harness) Get(ns, name string) (*corev1.Pod, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pods[ns+"/"+name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "pod %s not found", name)
	}
	return p, nil
}

func (h *harness) Bind(_ context.Context, pod *corev1.Pod, node string) error {
	h.mu.Lock()
	if h.bindErr != nil {
		h.mu.Unlock()
		return h.bindErr
	}
	key := pod.Namespace + "/" + pod.Name
	cur := h.pods[key]
	if cur.Spec.NodeName != "" {
		h.mu.Unlock()
		return apierror.New(apierror.ErrConflict, "pod %s is already assigned", pod.Name)
	}
	bound := cur.DeepCopy()
	bound.Spec.NodeName = node
	h.pods[key] = bound
	h.bindings[key] = node
	h.order = append(h.order, key)
	observe := h.observe
	h.mu.Unlock()
	if observe {
		h.s.PodHandler().OnUpdate(cur, bound)
	}
	return nil
}

func (h *harness) UpdatePodStatus(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	h.mu.Lock()
	key := pod.Namespace + "/" + pod.Name
	old := h.pods[key]
	h.pods[key] = pod.DeepCopy()
	h.mu.Unlock()
	h.s.PodHandler().OnUpdate(old, pod)
	return pod, nil
}

func (h *harness) addNode(n *corev1.Node) { h.s.NodeHandler().OnAdd(n) }

func (h *harness) addPod(p *corev1.Pod) {
	h.mu.Lock()
	h.pods[p.Namespace+"/"+p.Name] = p
	h.mu.Unlock()
	h.s.PodHandler().OnAdd(p)
}

// run schedules until nothing is ready.
func (h *harness) run() {
	for h.s.ScheduleNext(h.t.Context()) {
	}
}

func (h *harness) perNode() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, n := range h.bindings {
		out[n]++
	}
	return out
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func mkNode(name string, pods string, mod ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse(pods)},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mod {
		m(n)
	}
	return n
}

func mkPod(name string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	for _, m := range mod {
		m(p)
	}
	return p
}

func TestHarnessRoundRobinSpreads(t *testing.T) {
	h := newHarness(t, &framework.RoundRobin{})
	h.addNode(mkNode("a", "110"))
	h.addNode(mkNode("b", "110"))
	for _, n := range []string{"p1", "p2", "p3", "p4"} {
		h.addPod(mkPod(n))
	}
	h.run()
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 2}, h.perNode()); diff != "" {
		t.Errorf("pods per node (-want +got):\n%s", diff)
	}
	scheduled := 0
	for _, e := range h.drainEvents() {
		if strings.HasPrefix(e, "Normal Scheduled Successfully assigned default/p") {
			scheduled++
		}
	}
	if scheduled != 4 {
		t.Errorf("%d Scheduled events, want 4", scheduled)
	}
}

func TestHarnessUnschedulableThenNodeArrives(t *testing.T) {
	h := newHarness(t, framework.Balanced{})
	h.addNode(mkNode("a", "2"))
	h.addNode(mkNode("b", "110", func(n *corev1.Node) { n.Spec.Unschedulable = true }))
	for _, n := range []string{"p1", "p2", "p3"} {
		h.addPod(mkPod(n))
	}
	h.run()
	if diff := cmp.Diff(map[string]int{"a": 2}, h.perNode()); diff != "" {
		t.Fatalf("pods per node (-want +got):\n%s", diff)
	}
	var pending *corev1.Pod
	for _, k := range []string{"p1", "p2", "p3"} {
		p, _ := h.Get("default", k)
		if p.Spec.NodeName == "" {
			pending = p
		}
	}
	want := "0/2 nodes are available: 1 Too many pods, 1 node(s) were unschedulable."
	if pending == nil || len(pending.Status.Conditions) != 1 {
		t.Fatalf("pending pod %v has no single PodScheduled condition", pending)
	}
	c := pending.Status.Conditions[0]
	if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != "Unschedulable" || c.Message != want {
		t.Errorf("condition %+v, want PodScheduled False Unschedulable %q", c, want)
	}
	if diff := cmp.Diff([]string{"Warning FailedScheduling " + want}, filter(h.drainEvents(), "Warning")); diff != "" {
		t.Errorf("warning events (-want +got):\n%s", diff)
	}

	// Uncordoning b is a change that may let the pod fit: it is retried before its back-off.
	h.s.NodeHandler().OnUpdate(mkNode("b", "110", func(n *corev1.Node) { n.Spec.Unschedulable = true }), mkNode("b", "110"))
	h.run()
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 1}, h.perNode()); diff != "" {
		t.Errorf("after uncordon, pods per node (-want +got):\n%s", diff)
	}
}

func filter(events []string, prefix string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

func TestHarnessAssumedPodsHoldTheirSlot(t *testing.T) {
	h := newHarness(t, framework.LeastPods{})
	h.observe = false // bindings are never seen: only the assumptions count
	h.addNode(mkNode("a", "1"))
	h.addNode(mkNode("b", "1"))
	for _, n := range []string{"p1", "p2", "p3"} {
		h.addPod(mkPod(n))
	}
	h.run()
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1}, h.perNode()); diff != "" {
		t.Errorf("pods per node (-want +got):\n%s", diff)
	}
}

func TestHarnessBindConflictIsForgotten(t *testing.T) {
	h := newHarness(t, framework.LeastPods{})
	h.addNode(mkNode("a", "110"))
	h.addPod(mkPod("p1"))
	h.bindErr = apierror.New(apierror.ErrConflict, "already bound")
	h.run()
	if h.s.cfg.Cache.IsAssumed("default", "p1") {
		t.Error("pod still assumed after a refused bind")
	}
	if n := h.s.cfg.Queue.Backoffs("default/p1"); n != 0 {
		t.Errorf("a refused bind is retried (%d back-offs)", n)
	}
}

func TestHarnessOnlyLeaderBinds(t *testing.T) {
	h := newHarness(t, framework.LeastPods{})
	*h.leader.v = false
	h.addNode(mkNode("a", "110"))
	h.addPod(mkPod("p1"))
	h.run()
	if len(h.perNode()) != 0 {
		t.Errorf("a non-leader bound %v", h.perNode())
	}
}

func TestHarnessIgnoresOtherSchedulers(t *testing.T) {
	h := newHarness(t, framework.LeastPods{})
	h.addNode(mkNode("a", "110"))
	h.addPod(mkPod("mine", func(p *corev1.Pod) { p.Spec.SchedulerName = DefaultSchedulerName }))
	h.addPod(mkPod("theirs", func(p *corev1.Pod) { p.Spec.SchedulerName = "other" }))
	h.run()
	if diff := cmp.Diff(map[string]string{"default/mine": "a"}, h.bindings); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
}

// A pending pod that reached the store but not the queue (a lost key) is found by Sweep and
// bound; pods the queue holds, young pods, bound pods and assumed pods are left alone.
func TestHarnessSweepFindsLostPods(t *testing.T) {
	h := newHarness(t, &framework.RoundRobin{})
	h.addNode(mkNode("a", "110"))
	now := h.s.cfg.Clock.Now()

	lost := mkPod("lost")
	h.mu.Lock()
	h.pods["default/lost"] = lost // never handed to the handler: the queue does not know it
	h.mu.Unlock()
	queued := mkPod("queued")
	h.addPod(queued)
	young := mkPod("young", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-time.Second)) })
	bound := mkPod("bound", func(p *corev1.Pod) { p.Spec.NodeName = "a" })

	if n := h.s.Sweep([]*corev1.Pod{lost, queued, young, bound}); n != 1 {
		t.Fatalf("Sweep added %d pods, want 1 (only the lost one)", n)
	}
	if n := h.s.Sweep([]*corev1.Pod{lost}); n != 0 {
		t.Fatalf("a second Sweep added the queued pod again (%d)", n)
	}
	h.run()
	if h.bindings["default/lost"] != "a" || h.bindings["default/queued"] != "a" {
		t.Fatalf("bindings = %v, want lost and queued on a", h.bindings)
	}

	// An assumed pod whose binding the informer has not shown yet is not lost either.
	h.observe = false
	late := mkPod("late")
	h.addPod(late)
	h.run()
	if _, ok := h.bindings["default/late"]; !ok {
		t.Fatal("late was not bound")
	}
	if n := h.s.Sweep([]*corev1.Pod{late}); n != 0 {
		t.Fatalf("Sweep re-added a pod whose binding is only assumed (%d)", n)
	}
}

// On a cluster large enough that each pod looks at only some nodes, the rotating start still
// lets the balanced strategy spread identical pods one per node; and a pod that fits nowhere
// still hears about every node.
func TestHarnessSampledSearchSpreads(t *testing.T) {
	h := newHarness(t, framework.Balanced{})
	const nodes = 300
	for i := range nodes {
		h.addNode(mkNode(fmt.Sprintf("n%03d", i), "110"))
	}
	sample := framework.NumFeasibleNodesToFind(nodes, 0)
	if sample >= nodes {
		t.Fatalf("test needs a cluster where pods look at fewer nodes than exist (%d of %d)", sample, nodes)
	}
	for i := range nodes {
		h.addPod(mkPod(fmt.Sprintf("p%03d", i)))
		h.run()
		h.drainEvents() // the fake recorder holds only so many
	}
	// Without the rotation every search would see the same first nodes, and the pods would
	// pile onto those. With it, pods reach nearly every node, none gets more than two.
	per := h.perNode()
	if len(per) < nodes*9/10 {
		t.Errorf("%d pods landed on only %d of %d nodes (one search looks at %d)", nodes, len(per), nodes, sample)
	}
	for n, c := range per {
		if c > 2 {
			t.Errorf("node %s got %d pods while others got none", n, c)
		}
	}
	big := mkPod("big", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	})
	h.addPod(big)
	h.run()
	want := fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu.", nodes, nodes)
	found := false
	evs := h.drainEvents()
	for _, e := range evs {
		if strings.Contains(e, want) {
			found = true
		}
	}
	if !found {
		t.Errorf("no FailedScheduling event saying %q in %d events, last %q", want, len(evs), evs[len(evs)-1])
	}
}
