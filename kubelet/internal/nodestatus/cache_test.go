package nodestatus_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// These tests feed the agent as the kubelet's bus-fed node cache does (Observe), and check
// that it then reads its Node from what it observed instead of asking the apiserver.

func TestFedRegisterWaitsForPodCIDRWithoutPolling(t *testing.T) {
	h := newHarness(t)
	h.api.noCIDR = true
	// The cache has listed before registration: the node does not exist yet.
	h.agent.Observe(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	h.agent.ObserveDeleted("node-1")
	done := make(chan error, 1)
	go func() { done <- h.agent.Register(t.Context()) }()
	eventually(t, "Register to create the node", func() bool { return h.api.node("node-1") != nil })
	// Fed by the cache, it waits for it: no timer, no read of the Node.
	h.clk.Step(time.Minute)
	select {
	case err := <-done:
		t.Fatalf("Register returned %v before the node had a pod CIDR", err)
	default:
	}
	if n := h.clk.Waiters(); n != 0 {
		t.Errorf("%d timers while waiting for the cache, want none (no polling)", n)
	}
	h.api.mu.Lock()
	h.api.nodes["node-1"].Spec.PodCIDR = "10.244.3.0/24"
	h.api.mu.Unlock()
	h.agent.Observe(h.api.node("node-1"))
	if err := <-done; err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got := h.agent.PodCIDR(); got != "10.244.3.0/24" {
		t.Errorf("PodCIDR() = %q, want 10.244.3.0/24", got)
	}
	if got := h.api.count("get node"); got != 0 {
		t.Errorf("node read %d times, want 0: the cache told the pod CIDR", got)
	}
}

func TestFedStatusReadsTheCache(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.agent.Observe(h.api.node("node-1"))
	gets := h.api.count("get node")
	for range 6 {
		h.step(t, 10*time.Second)
	}
	if got := h.api.count("get node") - gets; got != 0 {
		t.Errorf("node read %d times in 6 status periods, want 0 with a cache", got)
	}
	if got := h.api.count("update node/status"); got != 1 {
		t.Errorf("%d status writes in 60s, want the 1 heartbeat only", got)
	}

	// Someone else marks the node Unknown; the cache shows it, the next period corrects it.
	n := h.api.node("node-1")
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionUnknown
		}
	}
	h.api.putNode(n)
	h.agent.Observe(h.api.node("node-1"))
	h.step(t, 10*time.Second)
	if got := condition(h.api.node("node-1"), corev1.NodeReady).Status; got != corev1.ConditionTrue {
		t.Errorf("Ready = %q one period after the cache showed Unknown, want True", got)
	}
	if got := h.api.count("get node") - gets; got != 0 {
		t.Errorf("node read %d times, want 0: the cache showed the change", got)
	}
}

func TestFedStaleCacheConflictsThenReads(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	stale := h.api.node("node-1")
	h.agent.Observe(stale)
	// A change the cache has not seen yet (the bus is behind), then a status change here.
	n := h.api.node("node-1")
	n.Labels["seen"] = "no"
	h.api.putNode(n)
	h.setReady(apierror.New(apierror.ErrUnavailable, "runtime down"))
	h.step(t, 10*time.Second)
	if got := h.api.count("update node/status"); got != 2 {
		t.Errorf("%d status writes, want 2 (the stale one conflicts, the retry reads and writes)", got)
	}
	if got := condition(h.api.node("node-1"), corev1.NodeReady).Status; got != corev1.ConditionFalse {
		t.Errorf("Ready = %q, want False after the retry", got)
	}
	if got := h.api.node("node-1").Labels["seen"]; got != "no" {
		t.Errorf("label seen = %q: the status write lost another writer's change", got)
	}
}

func TestFedDeletedNodeRegisteredAgain(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.agent.Observe(h.api.node("node-1"))
	h.api.deleteNode("node-1")
	h.agent.ObserveDeleted("node-1")
	h.step(t, 10*time.Second)
	n := h.api.node("node-1")
	if n == nil {
		t.Fatal("node deleted in the cache was not registered again")
	}
	if n.Spec.PodCIDR != "10.244.0.0/24" {
		t.Errorf("podCIDR = %q, want the old 10.244.0.0/24", n.Spec.PodCIDR)
	}
}
