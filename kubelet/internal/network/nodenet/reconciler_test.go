package nodenet_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/network/nodenet/fake"
)

// fakeNodes is a node cache the test fills.
type fakeNodes struct {
	mu     sync.Mutex
	nodes  map[string]*corev1.Node
	synced bool
}

func (f *fakeNodes) List() []*corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*corev1.Node
	for _, n := range f.nodes {
		out = append(out, n)
	}
	return out
}

func (f *fakeNodes) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced
}

func (f *fakeNodes) set(name, cidr, ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	}
	f.nodes[name] = n
}

func (f *fakeNodes) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.nodes, name)
}

type rig struct {
	kernel *fake.Kernel
	ipt    *fake.IPTables
	nodes  *fakeNodes
	r      *nodenet.Reconciler
}

func newRig(t *testing.T, mode nodenet.Mode) *rig {
	t.Helper()
	// The node's one interface holds its InternalIP on a /24: peers at 192.168.5.x are
	// reachable gateways, others are not.
	g := &rig{kernel: fake.NewKernel(netip.MustParsePrefix("192.168.5.1/24")), ipt: fake.NewIPTables(), nodes: &fakeNodes{nodes: map[string]*corev1.Node{}}}
	g.nodes.set("self", "10.244.0.0/24", "192.168.5.1")
	self := func() nodenet.Peer {
		for _, n := range g.nodes.List() {
			if n.Name == "self" {
				return nodenet.PeerOf(n)
			}
		}
		return nodenet.Peer{Name: "self"}
	}
	r, err := nodenet.NewReconciler(nodenet.ReconcilerConfig{Config: nodenet.Config{Mode: mode}, ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16")}, g.kernel, g.ipt, self, g.nodes)
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	return g
}

func routes(k *fake.Kernel) []string {
	var out []string
	for _, r := range k.State().Routes {
		out = append(out, r.String())
	}
	return out
}

func TestReconcilerWaitsForTheCache(t *testing.T) {
	g := newRig(t, nodenet.HostGW)
	g.kernel.AddForeignRoute(hostRoute("10.244.1.0/24", "192.168.5.2")) // from the last run
	if err := g.r.Sync(t.Context()); !errors.Is(err, nodenet.ErrNotSynced) {
		t.Errorf("Sync before the cache listed = %v, want ErrNotSynced", err)
	}
	if got := routes(g.kernel); len(got) != 1 {
		t.Errorf("routes = %q: a sync before the cache listed must change nothing", got)
	}
	if calls := g.ipt.Calls(); len(calls) != 0 {
		t.Errorf("iptables changed before the cache listed: %q", calls)
	}
}

func TestReconcilerHostGW(t *testing.T) {
	g := newRig(t, nodenet.HostGW)
	g.nodes.synced = true
	// A route of ours from an earlier run to a node that has gone since.
	g.kernel.AddForeignRoute(hostRoute("10.244.9.0/24", "192.168.5.9"))
	g.nodes.set("b", "10.244.1.0/24", "192.168.5.2")
	g.nodes.set("c", "", "192.168.5.3") // no pod CIDR yet
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"start", func() {}, []string{"10.244.1.0/24 via 192.168.5.2"}},
		{"c gets its pod CIDR", func() { g.nodes.set("c", "10.244.2.0/24", "192.168.5.3") },
			[]string{"10.244.1.0/24 via 192.168.5.2", "10.244.2.0/24 via 192.168.5.3"}},
		{"b changes address", func() { g.nodes.set("b", "10.244.1.0/24", "192.168.5.22") },
			[]string{"10.244.1.0/24 via 192.168.5.22", "10.244.2.0/24 via 192.168.5.3"}},
		{"c leaves", func() { g.nodes.remove("c") }, []string{"10.244.1.0/24 via 192.168.5.22"}},
		{"b leaves", func() { g.nodes.remove("b") }, nil},
	}
	for _, s := range steps {
		s.change()
		if err := g.r.Sync(t.Context()); err != nil {
			t.Fatalf("%s: Sync: %v", s.name, err)
		}
		if d := cmp.Diff(s.want, routes(g.kernel)); d != "" {
			t.Errorf("%s: routes (-want +got):\n%s", s.name, d)
		}
	}
	if got := len(g.ipt.Rules("nat", nodenet.PostroutingChain)); got != 2 {
		t.Errorf("%d masquerade rules, want 2", got)
	}
	// Nothing changed: nothing done.
	g.kernel.Changes()
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := g.kernel.Changes(); len(c) != 0 {
		t.Errorf("a sync with nothing to do changed %q", c)
	}
}

func TestReconcilerGoesOnPastAFailingRoute(t *testing.T) {
	g := newRig(t, nodenet.HostGW)
	g.nodes.synced = true
	g.nodes.set("b", "10.244.1.0/24", "10.9.9.9") // not on this node's segment: unreachable
	g.nodes.set("c", "10.244.2.0/24", "192.168.5.3")
	err := g.r.Sync(t.Context())
	if err == nil || !strings.Contains(err.Error(), "10.244.1.0/24") {
		t.Errorf("Sync = %v, want the failing route named", err)
	}
	if d := cmp.Diff([]string{"10.244.2.0/24 via 192.168.5.3"}, routes(g.kernel)); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
}

func TestReconcilerVXLAN(t *testing.T) {
	g := newRig(t, nodenet.VXLAN)
	g.nodes.synced = true
	g.nodes.set("b", "10.244.1.0/24", "192.168.5.2")
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := nodenet.Plan{
		VTEP: &nodenet.VTEP{Name: "minik8s.1", VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.5.1"), MAC: "02:6b:c0:a8:05:01",
			Address: netip.MustParseAddr("10.244.0.0")},
		Routes:    []nodenet.Route{{Dst: netip.MustParsePrefix("10.244.1.0/24"), Gw: netip.MustParseAddr("10.244.1.0"), Dev: "minik8s.1", Onlink: true}},
		Neighbors: []nodenet.Neighbor{{IP: netip.MustParseAddr("10.244.1.0"), MAC: "02:6b:c0:a8:05:02"}},
		FDB:       []nodenet.FDB{{MAC: "02:6b:c0:a8:05:02", Dst: netip.MustParseAddr("192.168.5.2")}},
	}
	if d := diffPlan(want, g.kernel.State()); d != "" {
		t.Errorf("kernel after b joined (-want +got):\n%s", d)
	}
	g.nodes.remove("b")
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want.Routes, want.Neighbors, want.FDB = nil, nil, nil
	if d := diffPlan(want, g.kernel.State()); d != "" {
		t.Errorf("kernel after b left (-want +got):\n%s", d)
	}
}

// TestReconcilerRestoresWhatTheVTEPChangeFlushed: a new pod CIDR gives the device a new
// address, and the kernel flushes its neighbours and the routes through it (see the
// nodenettest contract); the same sync puts them back.
func TestReconcilerRestoresWhatTheVTEPChangeFlushed(t *testing.T) {
	g := newRig(t, nodenet.VXLAN)
	g.nodes.synced = true
	g.nodes.set("b", "10.244.1.0/24", "192.168.5.2")
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	g.nodes.set("self", "10.244.5.0/24", "192.168.5.1")
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := nodenet.Desired(nodenet.Config{Mode: nodenet.VXLAN}, peer("self", "10.244.5.0/24", "192.168.5.1"),
		[]nodenet.Peer{peer("b", "10.244.1.0/24", "192.168.5.2")})
	if len(want.Routes) != 1 || want.VTEP.Address != netip.MustParseAddr("10.244.5.0") {
		t.Fatalf("Desired = %+v, want one route and the new address", want)
	}
	if d := diffPlan(want, g.kernel.State()); d != "" {
		t.Errorf("kernel after the pod CIDR changed (-want +got):\n%s", d)
	}
}

func TestReconcilerModeSwitchRemovesTheOldMode(t *testing.T) {
	g := newRig(t, nodenet.VXLAN)
	g.nodes.synced = true
	g.nodes.set("b", "10.244.1.0/24", "192.168.5.2")
	if err := g.r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The kubelet restarts in host-gw mode on the same kernel.
	hostgw, err := nodenet.NewReconciler(nodenet.ReconcilerConfig{Config: nodenet.Config{Mode: nodenet.HostGW}, ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16")},
		g.kernel, g.ipt, func() nodenet.Peer { return peer("self", "10.244.0.0/24", "192.168.5.1") }, g.nodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := hostgw.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := diffPlan(nodenet.Plan{Routes: []nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.2")}}, g.kernel.State()); d != "" {
		t.Errorf("kernel after the switch to host-gw (-want +got):\n%s", d)
	}
}

func TestReconcilerStartFollowsTriggers(t *testing.T) {
	g := newRig(t, nodenet.HostGW)
	g.nodes.synced = true
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- g.r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}()
	g.nodes.set("b", "10.244.1.0/24", "192.168.5.2")
	g.r.Trigger()
	waitFor(t, "the route to b", func() bool { return len(routes(g.kernel)) == 1 })
	g.nodes.remove("b")
	g.r.Trigger()
	waitFor(t, "the route to b to go", func() bool { return len(routes(g.kernel)) == 0 })
}

// waitFor polls cond with a generous deadline: the machine is shared.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
