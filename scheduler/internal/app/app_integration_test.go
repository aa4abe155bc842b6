package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apiservertest"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

// Generous: the machine is shared with other builds and tests.
const waitTimeout = 90 * time.Second

// syncBuffer collects one scheduler's log so the test can see which process bound what.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type cluster struct {
	t      *testing.T
	pods   *client.Typed[*corev1.Pod, *corev1.PodList]
	nodes  *client.Typed[*corev1.Node, *corev1.NodeList]
	events *client.Typed[*corev1.Event, *corev1.EventList]
	leases *client.Typed[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

func (c *cluster) node(name string) { c.sizedNode(name, nil, "4", "8Gi") }

// sizedNode registers a Ready node with labels and the given CPU and memory.
func (c *cluster) sizedNode(name string, labels map[string]string, cpu, memory string) {
	ctx := c.t.Context()
	n, err := c.nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create node %s: %v", name, err)
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := c.nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		c.t.Fatalf("node %s status: %v", name, err)
	}
}

func (c *cluster) pod(name string, selector map[string]string) {
	_, err := c.pods.Create(c.t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Image: "minik8s/pause:1.0"}}}},
		metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create pod %s: %v", name, err)
	}
}

// boundTo waits until every named pod has a node and returns where each went.
func (c *cluster) boundTo(names ...string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	eventually(c.t, fmt.Sprintf("pods %v bound", names), func() bool {
		for _, n := range names {
			p, err := c.pods.Get(c.t.Context(), "default", n, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" {
				return false
			}
			out[n] = p.Spec.NodeName
		}
		return true
	})
	return out
}

func (c *cluster) holder() string {
	l, err := c.leases.Get(c.t.Context(), "kube-system", "kube-scheduler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// startScheduler runs app.Run in-process; the returned stop ends it and waits.
func startScheduler(t *testing.T, home, amqpURL, identity string, logs *syncBuffer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		done <- Run(ctx, Config{Kubeconfig: filepath.Join(home, "kubeconfigs", "scheduler.kubeconfig"), AMQPURL: amqpURL,
			Strategy: "roundrobin", LeaderElect: true, Identity: identity, LeaseNamespace: "kube-system",
			// Longer than any wait here: what the tests see came through the bus, not the
			// periodic relist that would repair a missed message.
			LeaseName: "kube-scheduler", RelistPeriod: 10 * time.Minute, ShutdownTimeout: 15 * time.Second}, log)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("scheduler %s: %v", identity, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("scheduler %s did not stop", identity)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestSchedulerOnRealAPIServer(t *testing.T) {
	amqptest.Require(t)
	amqpURL := amqptest.VHost(t)
	home := apiservertest.Start(t, amqpURL)
	ccfg, err := client.FromKubeconfig(filepath.Join(home, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, pods: client.MustFor[*corev1.Pod, *corev1.PodList](cl), nodes: client.MustFor[*corev1.Node, *corev1.NodeList](cl),
		events: client.MustFor[*corev1.Event, *corev1.EventList](cl), leases: client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](cl)}
	c.node("node-a")
	c.node("node-b")

	var logsA, logsB syncBuffer
	stopA := startScheduler(t, home, amqpURL, "sched-a", &logsA)
	eventually(t, "sched-a to lead", func() bool { return c.holder() == "sched-a" })
	startScheduler(t, home, amqpURL, "sched-b", &logsB)
	defer func() {
		if t.Failed() {
			t.Logf("sched-a log:\n%s\nsched-b log:\n%s", tail(logsA.buf.String(), 40), tail(logsB.buf.String(), 40))
		}
	}()

	t.Run("round-robin spreads 4 pods 2/2", func(t *testing.T) {
		for i := range 4 {
			c.pod(fmt.Sprintf("rr-%d", i), nil)
		}
		per := map[string]int{}
		for _, n := range c.boundTo("rr-0", "rr-1", "rr-2", "rr-3") {
			per[n]++
		}
		if per["node-a"] != 2 || per["node-b"] != 2 {
			t.Errorf("pods per node %v, want 2 on each", per)
		}
	})

	t.Run("a nodeSelector matching nothing stays Pending with the reason", func(t *testing.T) {
		c.pod("nowhere", map[string]string{"disk": "ssd"})
		want := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
		eventually(t, "PodScheduled=False on pod nowhere", func() bool {
			p, err := c.pods.Get(t.Context(), "default", "nowhere", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled {
					return p.Spec.NodeName == "" && cond.Status == corev1.ConditionFalse && cond.Reason == "Unschedulable" && cond.Message == want
				}
			}
			return false
		})
		eventually(t, "a FailedScheduling Event", func() bool {
			evs, err := c.events.List(t.Context(), "default", metav1.ListOptions{FieldSelector: "involvedObject.name=nowhere"})
			if err != nil {
				return false
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedScheduling" && e.Type == corev1.EventTypeWarning && e.Message == want {
					return true
				}
			}
			return false
		})
	})

	t.Run("a cordoned node gets nothing", func(t *testing.T) {
		if _, err := c.nodes.Patch(t.Context(), "", "node-b", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)); err != nil {
			t.Fatal(err)
		}
		// The cordon must reach the leader's cache before the pods do. The pending pod is
		// retried on every node change, so its message shows when the cordon has been seen.
		eventually(t, "the cordon to reach the scheduler", func() bool {
			p, err := c.pods.Get(t.Context(), "default", "nowhere", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && strings.Contains(cond.Message, "1 node(s) were unschedulable") {
					return true
				}
			}
			return false
		})
		for i := range 3 {
			c.pod(fmt.Sprintf("cordon-%d", i), nil)
		}
		for p, n := range c.boundTo("cordon-0", "cordon-1", "cordon-2") {
			if n != "node-a" {
				t.Errorf("pod %s went to cordoned %s", p, n)
			}
		}
	})

	// The scheduler's queue skips bound pods' status-only changes; finishing is not one of
	// them, since a pod that Succeeded takes no room any more.
	t.Run("a pod that finishes frees its room", func(t *testing.T) {
		ctx := t.Context()
		c.sizedNode("node-small", map[string]string{"size": "small"}, "1", "1Gi")
		// Out of the way of the next test, which expects node-a to be the only choice, even
		// when this one fails half way.
		defer func() {
			if _, err := c.nodes.Patch(context.Background(), "", "node-small", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)); err != nil {
				t.Errorf("cordon node-small: %v", err)
			}
		}()
		big := func(name string) {
			_, err := c.pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"size": "small"}, RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "minik8s/pause:1.0", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("800m")}}}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create pod %s: %v", name, err)
			}
		}
		big("big-1")
		if got := c.boundTo("big-1")["big-1"]; got != "node-small" {
			t.Fatalf("big-1 went to %s, want node-small", got)
		}
		big("big-2")
		pendingFor := func(reason string) func() bool {
			return func() bool {
				p, err := c.pods.Get(ctx, "default", "big-2", metav1.GetOptions{})
				if err != nil || p.Spec.NodeName != "" {
					return false
				}
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodScheduled && strings.Contains(cond.Message, reason) {
						return true
					}
				}
				return false
			}
		}
		eventually(t, "big-2 Pending for want of CPU", pendingFor("Insufficient cpu"))
		for _, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded} {
			patch := []byte(`{"status":{"phase":"` + phase + `"}}`)
			if _, err := c.pods.Patch(ctx, "default", "big-1", types.MergePatchType, patch, "status"); err != nil {
				t.Fatalf("big-1 status %s: %v", phase, err)
			}
		}
		if got := c.boundTo("big-2")["big-2"]; got != "node-small" {
			t.Errorf("big-2 went to %s after big-1 finished, want node-small", got)
		}
	})

	t.Run("only the leader binds; the standby takes over", func(t *testing.T) {
		if got := logsB.count(`msg=bound`); got != 0 {
			t.Fatalf("the standby bound %d pods", got)
		}
		// Bind workers log after the API has the binding; wait for the lines, not just the pods.
		// 4 round-robin pods, 3 while node-b was cordoned, big-1 and big-2.
		const byLeader = 9
		eventually(t, "the leader to log its bindings", func() bool { return logsA.count(`msg=bound`) == byLeader })
		stopA() // releases the lease
		eventually(t, "sched-b to lead", func() bool { return c.holder() == "sched-b" })
		c.pod("after-failover", nil)
		if n := c.boundTo("after-failover")["after-failover"]; n != "node-a" {
			t.Errorf("after-failover went to %s, want node-a (node-b is cordoned)", n)
		}
		// The binding is visible in the API before the scheduler's log line is written.
		eventually(t, "the new leader to log its binding", func() bool { return logsB.count(`msg=bound`) == 1 })
		if got := logsA.count(`msg=bound`); got != byLeader {
			t.Errorf("the stopped leader logged %d bindings, want still %d", got, byLeader)
		}
	})
}
