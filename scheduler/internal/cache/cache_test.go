package cache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// fullSnapshot is a snapshot built from nothing, as the scheduling loop's first update is.
func fullSnapshot(c *Cache) []*framework.NodeInfo {
	var s Snapshot
	c.UpdateSnapshot(&s)
	return s.Nodes()
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func pod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
}

// counts is pods and requested millicores per node in a snapshot.
func counts(c *Cache) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, ni := range fullSnapshot(c) {
		out[ni.Name()] = [2]int64{int64(ni.Pods), ni.Requested.MilliCPU}
	}
	return out
}

func TestCache(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	steps := []struct {
		name string
		do   func(c *Cache)
		want map[string][2]int64
	}{
		{"nodes", func(c *Cache) { c.SetNode(node("a")); c.SetNode(node("b")) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
		{"bound pod counts", func(c *Cache) { c.SetPod(pod("p1", "a")) }, map[string][2]int64{"a": {1, 100}, "b": {0, 0}}},
		{"pending pod does not", func(c *Cache) { c.SetPod(pod("p2", "")) }, map[string][2]int64{"a": {1, 100}, "b": {0, 0}}},
		{"assumed pod counts", func(c *Cache) { c.Assume(pod("p2", ""), "b") }, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"confirmation replaces assumption", func(c *Cache) { c.SetPod(pod("p2", "b")) }, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"confirmation asking for more counts what it asks", func(c *Cache) {
			c.Assume(pod("p6", ""), "b")
			p := pod("p6", "b")
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("300m")
			c.SetPod(p)
		}, map[string][2]int64{"a": {1, 100}, "b": {2, 400}}},
		{"confirmation on another node moves the pod", func(c *Cache) { c.Assume(pod("p7", ""), "b"); c.SetPod(pod("p7", "a")) },
			map[string][2]int64{"a": {2, 200}, "b": {2, 400}}},
		{"a status change of a bound pod changes nothing", func(c *Cache) {
			p := pod("p7", "a")
			p.Status.Phase = corev1.PodRunning
			c.SetPod(p)
			c.RemovePod("ns", "p6")
			c.RemovePod("ns", "p7")
		}, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"forget leaves confirmed pods", func(c *Cache) { c.Forget("ns", "p2") }, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"forget drops an assumption", func(c *Cache) { c.Assume(pod("p3", ""), "a"); c.Forget("ns", "p3") }, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"assumption expires", func(c *Cache) { c.Assume(pod("p4", ""), "a"); clk.Step(DefaultAssumeTTL + time.Second) }, map[string][2]int64{"a": {1, 100}, "b": {1, 100}}},
		{"finished pod frees room", func(c *Cache) { p := pod("p1", "a"); p.Status.Phase = corev1.PodSucceeded; c.SetPod(p) }, map[string][2]int64{"a": {0, 0}, "b": {1, 100}}},
		{"deleted pod", func(c *Cache) { c.RemovePod("ns", "p2") }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
		{"pod on unknown node counts once it appears", func(c *Cache) { c.SetPod(pod("p5", "c")); c.SetNode(node("c")) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}, "c": {1, 100}}},
		{"node update keeps pods", func(c *Cache) { n := node("c"); n.Spec.Unschedulable = true; c.SetNode(n) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}, "c": {1, 100}}},
		{"removed node", func(c *Cache) { c.RemoveNode("a") }, map[string][2]int64{"b": {0, 0}, "c": {1, 100}}},
	}
	c := New(clk, 0)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do(c)
			if diff := cmp.Diff(s.want, counts(c)); diff != "" {
				t.Errorf("node pods/cpu (-want +got):\n%s", diff)
			}
		})
	}
	snap := fullSnapshot(c)
	snap[0].Pods = 99
	if fullSnapshot(c)[0].Pods == 99 {
		t.Error("a snapshot shares state with the cache")
	}
}

// A confirmation that counts as the assumption did leaves the node's snapshot copy alone:
// copying it again for every bound pod cost as much as the assumption itself.
func TestConfirmationKeepsSnapshotCopy(t *testing.T) {
	c := New(clock.NewFake(time.Unix(1000, 0)), 0)
	c.SetNode(node("a"))
	c.Assume(pod("p", ""), "a")
	var s Snapshot
	c.UpdateSnapshot(&s)
	before := s.copies
	c.SetPod(pod("p", "a"))
	if c.IsAssumed("ns", "p") {
		t.Fatal("the pod is still assumed after its binding was seen")
	}
	c.UpdateSnapshot(&s)
	if s.copies != before {
		t.Errorf("the node was copied again (%d copies) for a confirmation that changes nothing", s.copies-before)
	}
	if got := [2]int64{int64(s.Nodes()[0].Pods), s.Nodes()[0].Requested.MilliCPU}; got != [2]int64{1, 100} {
		t.Errorf("node a counts %v, want one pod of 100m", got)
	}
}

// Expiry is checked only once the earliest deadline may have passed; confirming the oldest
// assumption must not keep a younger one from expiring on time.
func TestAssumptionsExpireOnTime(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	c := New(clk, 0)
	c.SetNode(node("a"))
	var s Snapshot
	c.Assume(pod("old", ""), "a")
	c.UpdateSnapshot(&s)
	clk.Step(10 * time.Second)
	c.Assume(pod("young", ""), "a")
	c.SetPod(pod("old", "a"))
	clk.Step(DefaultAssumeTTL - 5*time.Second) // past old's deadline, not young's
	c.UpdateSnapshot(&s)
	if !c.IsAssumed("ns", "young") || s.Nodes()[0].Pods != 2 {
		t.Fatalf("young's assumption is gone early: assumed %v, pods %d", c.IsAssumed("ns", "young"), s.Nodes()[0].Pods)
	}
	clk.Step(10 * time.Second) // past young's deadline
	c.UpdateSnapshot(&s)
	if c.IsAssumed("ns", "young") || s.Nodes()[0].Pods != 1 {
		t.Errorf("young's assumption outlived its deadline: assumed %v, pods %d", c.IsAssumed("ns", "young"), s.Nodes()[0].Pods)
	}
}

// reporting is node name with the kubelet's usage annotations: cpu in millicores, at when.
func reporting(name, cpu string, at time.Time) *corev1.Node {
	n := node(name)
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	n.Annotations = map[string]string{scheme.AnnotationUsageCPU: cpu, scheme.AnnotationUsageMemory: "1Gi",
		scheme.AnnotationUsageTime: at.UTC().Format(time.RFC3339)}
	return n
}

func TestCacheUsage(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	c := New(clk, 0)
	// a requests little but is busy; b requests more and reports nothing.
	c.SetNode(reporting("a", "1800m", t0))
	b := node("b")
	b.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	c.SetNode(b)
	c.SetPod(pod("x", "a"))
	p := pod("y", "b")
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	c.SetPod(p)

	steps := []struct {
		name      string
		do        func()
		wantUsage map[string]int64 // node -> reported millicores the snapshot keeps
		wantPick  string           // leastcpu's choice for a 100m pod
	}{
		{"fresh usage counts", func() {}, map[string]int64{"a": 1800}, "b"},
		{"still fresh at the bound", func() { clk.Step(DefaultUsageMaxAge) }, map[string]int64{"a": 1800}, "b"},
		{"stale usage is ignored", func() { clk.Step(time.Second) }, map[string]int64{}, "a"},
		{"a new report counts again", func() { c.SetNode(reporting("a", "1800m", clk.Now())) }, map[string]int64{"a": 1800}, "b"},
		{"a report from the future is not trusted", func() { c.SetNode(reporting("a", "1800m", clk.Now().Add(time.Hour))) }, map[string]int64{}, "a"},
		{"an unparsable report is ignored", func() {
			n := reporting("a", "1800m", clk.Now())
			n.Annotations[scheme.AnnotationUsageCPU] = "busy"
			c.SetNode(n)
		}, map[string]int64{}, "a"},
		{"a node update without the annotations drops the usage", func() {
			c.SetNode(reporting("a", "1800m", clk.Now()))
			n := reporting("a", "1800m", clk.Now())
			n.Annotations = nil
			c.SetNode(n)
		}, map[string]int64{}, "a"},
	}
	leastCPU, _ := framework.NewStrategy(framework.StrategyLeastCPU, nil)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			snap := fullSnapshot(c)
			got := map[string]int64{}
			for _, ni := range snap {
				if ni.Usage != nil {
					got[ni.Name()] = ni.Usage.MilliCPU
				}
			}
			if diff := cmp.Diff(s.wantUsage, got); diff != "" {
				t.Errorf("usage in the snapshot (-want +got):\n%s", diff)
			}
			if pick := leastCPU.Select(pod("new", ""), snap).Name(); pick != s.wantPick {
				t.Errorf("leastcpu picked %s, want %s", pick, s.wantPick)
			}
		})
	}
}

// An incrementally updated snapshot always equals a snapshot built from scratch, whatever
// mix of node, pod, assumption, usage and clock changes came in between, including more
// changes than the log keeps.
func TestUpdateSnapshotMatchesFullSnapshot(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	c := New(clk, 10*time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	var s Snapshot
	view := func(nodes []*framework.NodeInfo) []string {
		out := make([]string, len(nodes))
		for i, n := range nodes {
			u := "-"
			if n.Usage != nil {
				u = strconv.FormatInt(n.Usage.MilliCPU, 10)
			}
			out[i] = fmt.Sprintf("%s pods=%d cpu=%d owners=%v ports=%d usage=%s unsched=%v",
				n.Name(), n.Pods, n.Requested.MilliCPU, n.PodsByOwner, len(n.Ports), u, n.Node.Spec.Unschedulable)
		}
		return out
	}
	for round := range 3000 {
		ops := 1 + rng.IntN(8)
		if round%500 == 499 {
			ops = maxChanges + 10 // overflow the change log
		}
		for range ops {
			nodeName := fmt.Sprintf("n%d", rng.IntN(12))
			podName := fmt.Sprintf("p%d", rng.IntN(60))
			switch rng.IntN(9) {
			case 0:
				n := node(nodeName)
				n.Spec.Unschedulable = rng.IntN(2) == 0
				if rng.IntN(2) == 0 {
					n.Annotations = map[string]string{scheme.AnnotationUsageCPU: strconv.Itoa(rng.IntN(900)) + "m",
						scheme.AnnotationUsageMemory: "1Mi", scheme.AnnotationUsageTime: clk.Now().UTC().Format(time.RFC3339)}
				}
				c.SetNode(n)
			case 1:
				c.RemoveNode(nodeName)
			case 2, 3:
				c.SetPod(pod(podName, nodeName))
			case 4:
				c.SetPod(pod(podName, ""))
			case 5:
				c.RemovePod("ns", podName)
			case 6:
				c.Assume(pod(podName, ""), nodeName)
			case 7:
				c.Forget("ns", podName)
			case 8:
				clk.Step(time.Duration(rng.IntN(90)) * time.Second)
			}
		}
		c.UpdateSnapshot(&s)
		if diff := cmp.Diff(view(fullSnapshot(c)), view(s.Nodes())); diff != "" {
			t.Fatalf("round %d: incremental snapshot differs from a full one (-full +incremental):\n%s", round, diff)
		}
	}
}

// A snapshot that fell further behind than the change log reaches is rebuilt, not patched
// from the part of the log that is left.
func TestUpdateSnapshotBehindTheLog(t *testing.T) {
	c := New(clock.NewFake(time.Unix(1000, 0)), 0)
	c.SetNode(node("a"))
	c.SetNode(node("b"))
	var s Snapshot
	c.UpdateSnapshot(&s)
	c.SetPod(pod("on-a", "a")) // the change the trimmed log will have lost
	for i := range maxChanges + 1 {
		c.SetPod(pod("on-b-"+strconv.Itoa(i%2), "b"))
	}
	c.UpdateSnapshot(&s)
	for _, n := range s.Nodes() {
		if n.Name() == "a" && n.Pods != 1 {
			t.Fatalf("node a shows %d pods after the log was trimmed, want 1", n.Pods)
		}
	}
}
