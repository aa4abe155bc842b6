package nodestatus_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

type harness struct {
	api   *fakeAPI
	host  *nodestatus.FakeHost
	clk   *clock.Fake
	agent *nodestatus.Agent

	mu    sync.Mutex
	ready error // what the readiness func returns
}

func newHarness(t *testing.T, mutate ...func(*nodestatus.Config)) *harness {
	t.Helper()
	h := &harness{api: newFakeAPI(), host: nodestatus.NewFakeHost(), clk: clock.NewFake(t0)}
	cfg := nodestatus.Config{
		Name:                    "node-1",
		Labels:                  map[string]string{"zone": "a"},
		Roles:                   []string{"worker"},
		Taints:                  []corev1.Taint{{Key: "dedicated", Value: "test", Effect: corev1.TaintEffectNoSchedule}},
		ContainerRuntimeVersion: "docker://20.10.24",
		KubeletPort:             10250,
		RootDir:                 "/var/lib/minik8s",
		Host:                    h.host,
		Readiness: func(context.Context) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.ready
		},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := nodestatus.New(cfg, h.api.api(), h.clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.agent = a
	return h
}

// eventually waits for cond with a generous deadline; the machine is shared.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// start runs the agent until the test ends and waits until it is registered and both loops
// are asleep.
func (h *harness) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.agent.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v after cancel, want nil", err)
		}
	})
	h.settle(t)
}

// settle waits until the lease and status loops both sleep on the clock.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	eventually(t, "lease and status loops to sleep", func() bool { return h.clk.Waiters() == 2 })
}

// step moves the clock and waits for the loops to go back to sleep.
func (h *harness) step(t *testing.T, d time.Duration) {
	t.Helper()
	h.clk.Step(d)
	h.settle(t)
}

func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestRegisterCreatesNode(t *testing.T) {
	h := newHarness(t)
	if err := h.agent.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	n := h.api.node("node-1")
	if n == nil {
		t.Fatal("no node was created")
	}
	wantLabels := map[string]string{
		"kubernetes.io/hostname": "node-1", "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH,
		"node-role.kubernetes.io/worker": "", "zone": "a",
	}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.Taint{{Key: "dedicated", Value: "test", Effect: corev1.TaintEffectNoSchedule}}, n.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.10"}, {Type: corev1.NodeHostName, Address: "node-1"}}
	if diff := cmp.Diff(wantAddrs, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}, quantities(n.Status.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	// Memory less the 100Mi eviction threshold, disk less 10%.
	wantAlloc := map[string]string{"cpu": "4", "memory": "8092Mi", "pods": "110", "ephemeral-storage": "90Gi"}
	if diff := cmp.Diff(wantAlloc, quantities(n.Status.Allocatable)); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
	wantInfo := corev1.NodeSystemInfo{
		KernelVersion: "6.1.0-fake", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "docker://20.10.24",
		KubeletVersion: "v1.32.0-minik8s", OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
	}
	if diff := cmp.Diff(wantInfo, n.Status.NodeInfo); diff != "" {
		t.Errorf("nodeInfo (-want +got):\n%s", diff)
	}
	if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != 10250 {
		t.Errorf("kubelet endpoint port = %d, want 10250", got)
	}
	var gotConds []string
	for _, c := range n.Status.Conditions {
		gotConds = append(gotConds, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
	}
	wantConds := []string{"MemoryPressure=False/KubeletHasSufficientMemory", "DiskPressure=False/KubeletHasNoDiskPressure",
		"PIDPressure=False/KubeletHasSufficientPID", "Ready=True/KubeletReady"}
	if diff := cmp.Diff(wantConds, gotConds); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got := h.agent.PodCIDR(); got != "10.244.0.0/24" {
		t.Errorf("PodCIDR() = %q, want the assigned 10.244.0.0/24", got)
	}
	if diff := cmp.Diff([]string{"/var/lib/minik8s"}, h.host.DiskPaths()); diff != "" {
		t.Errorf("disk measured at (-want +got):\n%s", diff)
	}
	select {
	case <-h.agent.Registered():
	default:
		t.Error("Registered() not closed after Register succeeded")
	}
}

func TestRegisterUpdatesExistingNode(t *testing.T) {
	h := newHarness(t)
	h.api.putNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"owner": "ops", "zone": "old"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.7.0/24", PodCIDRs: []string{"10.244.7.0/24"},
			Taints: []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"pause:3.9"}}}},
	})
	if err := h.agent.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if diff := cmp.Diff([]string{"create node", "update node", "update node/status"}, h.api.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	n := h.api.node("node-1")
	if got := n.Labels["owner"]; got != "ops" {
		t.Errorf("label owner = %q: labels others set must stay", got)
	}
	if got := n.Labels["zone"]; got != "a" {
		t.Errorf("label zone = %q, want the config's \"a\"", got)
	}
	if got := n.Labels["kubernetes.io/hostname"]; got != "node-1" {
		t.Errorf("label kubernetes.io/hostname = %q, want node-1", got)
	}
	if diff := cmp.Diff([]corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}, n.Spec.Taints); diff != "" {
		t.Errorf("taints of an existing node changed (-want +got):\n%s", diff)
	}
	if got := quantities(n.Status.Capacity)["cpu"]; got != "4" {
		t.Errorf("capacity cpu = %q after re-registration, want 4", got)
	}
	if len(n.Status.Images) != 1 {
		t.Errorf("status.images = %v: fields the kubelet does not own must stay", n.Status.Images)
	}
	if got := condition(n, corev1.NodeReady).Status; got != corev1.ConditionTrue {
		t.Errorf("Ready = %q, want True", got)
	}
	if got := h.agent.PodCIDR(); got != "10.244.7.0/24" {
		t.Errorf("PodCIDR() = %q, want the node's existing 10.244.7.0/24", got)
	}
}

func TestRegisterRetriesConflicts(t *testing.T) {
	h := newHarness(t)
	h.api.putNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"}})
	h.api.fail("update node/status", apierror.New(apierror.ErrConflict, "modified"))
	if err := h.agent.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got := h.api.count("update node/status"); got != 2 {
		t.Errorf("status writes = %d, want 2 (one conflict, one retry)", got)
	}
	if got := condition(h.api.node("node-1"), corev1.NodeReady).Status; got != corev1.ConditionTrue {
		t.Errorf("Ready = %q after the retry, want True", got)
	}
}

func TestRegisterWaitsForPodCIDR(t *testing.T) {
	h := newHarness(t)
	h.api.noCIDR = true
	done := make(chan error, 1)
	go func() { done <- h.agent.Register(t.Context()) }()
	eventually(t, "Register to poll for the pod CIDR", func() bool { return h.clk.Waiters() == 1 })
	if got := h.agent.PodCIDR(); got != "" {
		t.Fatalf("PodCIDR() = %q before one was assigned", got)
	}
	h.api.mu.Lock()
	h.api.nodes["node-1"].Spec.PodCIDR = "10.244.3.0/24"
	h.api.mu.Unlock()
	h.clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got := h.agent.PodCIDR(); got != "10.244.3.0/24" {
		t.Errorf("PodCIDR() = %q, want 10.244.3.0/24", got)
	}
}

func TestStartRetriesRegistration(t *testing.T) {
	h := newHarness(t)
	h.api.fail("create node", apierror.New(apierror.ErrUnavailable, "apiserver starting"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.agent.Start(ctx) }()
	eventually(t, "Start to back off after the failed registration", func() bool { return h.clk.Waiters() == 1 })
	if h.api.node("node-1") != nil {
		t.Fatal("node exists although its creation failed")
	}
	h.clk.Step(time.Second)
	select {
	case <-h.agent.Registered():
	case <-time.After(30 * time.Second):
		t.Fatal("not registered after the back-off")
	}
	if got := h.api.count("create node"); got != 2 {
		t.Errorf("create node calls = %d, want 2", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v after cancel, want nil", err)
	}
}

func TestLeaseRenewedEveryPeriod(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	l := h.api.lease("kube-node-lease/node-1")
	if l == nil {
		t.Fatal("no lease in kube-node-lease after start")
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "node-1" {
		t.Errorf("holderIdentity = %v, want node-1", l.Spec.HolderIdentity)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("leaseDurationSeconds = %v, want 40", l.Spec.LeaseDurationSeconds)
	}
	uid := h.api.node("node-1").UID
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: uid}}
	if diff := cmp.Diff(wantOwner, l.OwnerReferences); diff != "" {
		t.Errorf("ownerReferences (-want +got):\n%s", diff)
	}
	for i := 1; i <= 3; i++ {
		h.step(t, 10*time.Second)
		l := h.api.lease("kube-node-lease/node-1")
		if want := t0.Add(time.Duration(i) * 10 * time.Second); !l.Spec.RenewTime.Time.Equal(want) {
			t.Errorf("after %d periods renewTime = %v, want %v", i, l.Spec.RenewTime.Time, want)
		}
		if got := h.api.count("update lease"); got != i {
			t.Errorf("after %d periods %d lease updates, want one per period", i, got)
		}
	}
	if got := h.api.count("create lease"); got != 1 {
		t.Errorf("lease created %d times, want once", got)
	}
}

func TestLeaseRecreatedAfterConflict(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.api.fail("update lease", apierror.New(apierror.ErrConflict, "modified"))
	h.step(t, 10*time.Second)
	// The failed renewal is retried well before the next period.
	h.step(t, time.Second)
	l := h.api.lease("kube-node-lease/node-1")
	if want := t0.Add(11 * time.Second); !l.Spec.RenewTime.Time.Equal(want) {
		t.Errorf("renewTime = %v, want the retry's %v", l.Spec.RenewTime.Time, want)
	}
}

func TestNoStatusWriteWhenNothingChanged(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	for i := 0; i < 5; i++ {
		h.step(t, 10*time.Second)
	}
	if got := h.api.count("update node/status"); got != 0 {
		t.Fatalf("%d status writes in 50s with nothing changed, want 0", got)
	}
	if got := h.api.count("get node"); got < 5 {
		t.Errorf("node read %d times in 5 periods: the status loop did not run", got)
	}
	h.step(t, 10*time.Second)
	if got := h.api.count("update node/status"); got != 1 {
		t.Fatalf("%d status writes after 60s, want 1 heartbeat", got)
	}
	ready := condition(h.api.node("node-1"), corev1.NodeReady)
	if want := t0.Add(time.Minute); !ready.LastHeartbeatTime.Time.Equal(want) {
		t.Errorf("Ready lastHeartbeatTime = %v, want %v", ready.LastHeartbeatTime.Time, want)
	}
	if !ready.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready lastTransitionTime = %v, want %v: a heartbeat is no transition", ready.LastTransitionTime.Time, t0)
	}
}

func TestConditionsFollowTheHost(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
		typ    corev1.NodeConditionType
		want   corev1.NodeCondition
	}{
		{"memory pressure", func(h *harness) { h.host.SetMemoryAvailable(50 << 20) }, corev1.NodeMemoryPressure,
			corev1.NodeCondition{Status: corev1.ConditionTrue, Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available"}},
		{"disk pressure", func(h *harness) {
			h.host.SetDisk(nodestatus.DiskStats{Capacity: 100 << 30, Available: 5 << 30})
		}, corev1.NodeDiskPressure,
			corev1.NodeCondition{Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"}},
		{"runtime down", func(h *harness) { h.setReady(errors.New("container runtime is down")) }, corev1.NodeReady,
			corev1.NodeCondition{Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.start(t)
			tt.change(h)
			h.step(t, 10*time.Second)
			if got := h.api.count("update node/status"); got != 1 {
				t.Fatalf("%d status writes after the change, want 1", got)
			}
			got := condition(h.api.node("node-1"), tt.typ)
			want := tt.want
			want.Type = tt.typ
			now := metav1.NewTime(t0.Add(10 * time.Second))
			want.LastHeartbeatTime, want.LastTransitionTime = now, now
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s condition (-want +got):\n%s", tt.typ, diff)
			}
			// Nothing else changes, so the next period writes nothing.
			h.step(t, 10*time.Second)
			if got := h.api.count("update node/status"); got != 1 {
				t.Errorf("%d status writes one period later, want still 1", got)
			}
		})
	}
}

func (h *harness) setReady(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready = err
}

func TestStatusCorrectsOthersChanges(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	// The node lifecycle controller marks a silent node Unknown; a live kubelet puts it back
	// at its next status period, not at the next heartbeat.
	n := h.api.node("node-1")
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionUnknown
			n.Status.Conditions[i].Reason = "NodeStatusUnknown"
		}
	}
	h.api.putNode(n)
	h.step(t, 10*time.Second)
	ready := condition(h.api.node("node-1"), corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
		t.Errorf("Ready = %s/%s, want True/KubeletReady", ready.Status, ready.Reason)
	}
	if want := t0.Add(10 * time.Second); !ready.LastTransitionTime.Time.Equal(want) {
		t.Errorf("Ready lastTransitionTime = %v, want %v", ready.LastTransitionTime.Time, want)
	}
}

func TestDeletedNodeRegisteredAgainWithItsPodCIDR(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.api.deleteNode("node-1")
	h.api.mu.Lock()
	h.api.nextCIDR = 9 // a fresh allocation would give another block
	h.api.mu.Unlock()
	h.step(t, 10*time.Second)
	n := h.api.node("node-1")
	if n == nil {
		t.Fatal("deleted node was not registered again")
	}
	if n.Spec.PodCIDR != "10.244.0.0/24" {
		t.Errorf("podCIDR = %q, want the old 10.244.0.0/24 the pods still use", n.Spec.PodCIDR)
	}
	// The next renewal points the Lease at the new Node.
	h.step(t, 10*time.Second)
	if got := h.api.lease("kube-node-lease/node-1").OwnerReferences; len(got) != 1 || got[0].UID != n.UID {
		t.Errorf("lease owner = %v, want the new node uid %s", got, n.UID)
	}
}
