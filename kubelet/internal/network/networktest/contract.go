package networktest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/shared/netns/netnstest"
)

// Env is one implementation under test, attached to a fresh pod network.
type Env struct {
	Net network.Network
	// Real means pods get real network namespaces and packets flow; only then do the
	// connectivity cases run.
	Real bool
	// Allocated returns the addresses the implementation holds right now (for cninet, the
	// files in host-local's directory), so release can be proven, not assumed.
	Allocated func(t *testing.T) []string
}

// Factory returns an Env whose pod network is cidr. It registers its own cleanup.
type Factory func(t *testing.T, cidr string) Env

// Test CIDRs, far from what the control plane hands out first so a running cluster on the
// same machine is never disturbed.
const (
	CIDR     = "10.244.250.0/24"
	TinyCIDR = "10.244.251.0/30" // exactly one pod address: .2
)

type sandbox struct {
	network.Pod
	env Env
}

// newPod makes a pod with its own namespace (real) or a made-up path (fake). Its cleanup tears
// it down before the namespace goes, as the kubelet would.
func newPod(t *testing.T, env Env, name string, ports ...network.PortMapping) sandbox {
	t.Helper()
	p := network.Pod{
		ID:        fmt.Sprintf("%s-%x", name, sha256.Sum256([]byte(t.Name())))[:len(name)+13],
		Namespace: "default",
		Name:      name,
		UID:       "uid-" + name,
		Ports:     ports,
	}
	if env.Real {
		p.NetNS = netnstest.New(t)
	} else {
		p.NetNS = "/run/netns/fake-" + name
	}
	t.Cleanup(func() {
		// t.Context is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := env.Net.TearDown(ctx, p); err != nil {
			t.Errorf("cleanup: TearDown(%s): %v", p.ID, err)
		}
	})
	return sandbox{Pod: p, env: env}
}

func setUp(t *testing.T, s sandbox) string {
	t.Helper()
	ip, err := s.env.Net.SetUp(t.Context(), s.Pod)
	if err != nil {
		t.Fatalf("SetUp(%s): %v", s.ID, err)
	}
	return ip
}

func tearDown(t *testing.T, s sandbox) {
	t.Helper()
	if err := s.env.Net.TearDown(t.Context(), s.Pod); err != nil {
		t.Fatalf("TearDown(%s): %v", s.ID, err)
	}
}

func wantAllocated(t *testing.T, env Env, want ...string) {
	t.Helper()
	got := env.Allocated(t)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("allocated addresses (-want +got):\n%s", diff)
	}
}

// assertPodAddr checks ip is a usable pod address of cidr: inside it, not the network, the
// gateway (.1, the bridge) or the broadcast address.
func assertPodAddr(t *testing.T, cidr, ip string) {
	t.Helper()
	p := netip.MustParsePrefix(cidr)
	a, err := netip.ParseAddr(ip)
	if err != nil {
		t.Fatalf("address %q: %v", ip, err)
	}
	if !p.Contains(a) {
		t.Fatalf("address %s is outside %s", ip, cidr)
	}
	gw := p.Addr().Next()
	if a == p.Addr() || a == gw {
		t.Fatalf("address %s is the network or gateway address of %s", ip, cidr)
	}
	if !p.Contains(a.Next()) {
		t.Fatalf("address %s is the broadcast address of %s", ip, cidr)
	}
}

// Run runs the contract against the implementation newEnv builds. Cases run one after another:
// real environments share the host's routing table.
func Run(t *testing.T, newEnv Factory) {
	cases := []struct {
		name     string
		cidr     string
		realOnly bool
		run      func(t *testing.T, env Env)
	}{
		{name: "distinct addresses inside the podCIDR", cidr: CIDR, run: distinctAddrs},
		{name: "set up twice returns the same address", cidr: CIDR, run: setUpTwice},
		{name: "concurrent set ups get distinct addresses", cidr: CIDR, run: concurrentSetUp},
		{name: "tear down releases and is idempotent", cidr: CIDR, run: tearDownReleases},
		{name: "released address is handed out again", cidr: TinyCIDR, run: addressReused},
		{name: "tear down after the netns is gone", cidr: CIDR, run: netnsGone},
		{name: "set up again after tear down", cidr: CIDR, run: setUpAgain},
		{name: "host reaches a pod at its address", cidr: CIDR, realOnly: true, run: hostReachesPod},
		{name: "pods reach each other", cidr: CIDR, realOnly: true, run: podsReachEachOther},
		{name: "hostPort is published on the node", cidr: CIDR, realOnly: true, run: hostPort},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, tc.cidr)
			if tc.realOnly && !env.Real {
				t.Skip("needs packets: runs against real implementations only")
			}
			tc.run(t, env)
		})
	}
}

func distinctAddrs(t *testing.T, env Env) {
	a, b := newPod(t, env, "a"), newPod(t, env, "b")
	ipA, ipB := setUp(t, a), setUp(t, b)
	assertPodAddr(t, CIDR, ipA)
	assertPodAddr(t, CIDR, ipB)
	if ipA == ipB {
		t.Fatalf("pods a and b both got %s", ipA)
	}
	wantAllocated(t, env, ipA, ipB)
}

func setUpTwice(t *testing.T, env Env) {
	a := newPod(t, env, "a")
	first, second := setUp(t, a), setUp(t, a)
	if first != second {
		t.Fatalf("second SetUp returned %s, first %s", second, first)
	}
	wantAllocated(t, env, first)
}

func concurrentSetUp(t *testing.T, env Env) {
	const n = 4
	pods := make([]sandbox, n)
	for i := range pods {
		pods[i] = newPod(t, env, fmt.Sprintf("p%d", i))
	}
	ips := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() { ips[i], errs[i] = env.Net.SetUp(t.Context(), pods[i].Pod) })
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range pods {
		if errs[i] != nil {
			t.Fatalf("SetUp(%s): %v", pods[i].ID, errs[i])
		}
		assertPodAddr(t, CIDR, ips[i])
		if j, dup := seen[ips[i]]; dup {
			t.Fatalf("pods %d and %d both got %s", j, i, ips[i])
		}
		seen[ips[i]] = i
	}
	wantAllocated(t, env, ips...)
}

func tearDownReleases(t *testing.T, env Env) {
	a, b := newPod(t, env, "a"), newPod(t, env, "b")
	setUp(t, a)
	ipB := setUp(t, b)
	tearDown(t, a)
	wantAllocated(t, env, ipB)
	tearDown(t, a) // again
	wantAllocated(t, env, ipB)
	never := newPod(t, env, "never-set-up")
	tearDown(t, never)
	wantAllocated(t, env, ipB)
}

func addressReused(t *testing.T, env Env) {
	a, b := newPod(t, env, "a"), newPod(t, env, "b")
	ipA := setUp(t, a)
	assertPodAddr(t, TinyCIDR, ipA)
	if ip, err := env.Net.SetUp(t.Context(), b.Pod); err == nil {
		t.Fatalf("SetUp(b) in a full %s returned %s, want an error", TinyCIDR, ip)
	}
	wantAllocated(t, env, ipA) // the failed SetUp must not hold anything
	tearDown(t, a)
	ipB := setUp(t, b)
	if ipB != ipA {
		t.Fatalf("b got %s, want the released %s", ipB, ipA)
	}
	wantAllocated(t, env, ipB)
}

func netnsGone(t *testing.T, env Env) {
	a := newPod(t, env, "a")
	setUp(t, a)
	if env.Real {
		netnstest.Delete(t, a.NetNS)
	}
	tearDown(t, a)
	wantAllocated(t, env)
	tearDown(t, a)
}

func setUpAgain(t *testing.T, env Env) {
	a := newPod(t, env, "a")
	setUp(t, a)
	tearDown(t, a)
	ip := setUp(t, a)
	assertPodAddr(t, CIDR, ip)
	wantAllocated(t, env, ip)
}

const servePort = 8080

func hostReachesPod(t *testing.T, env Env) {
	a := newPod(t, env, "a")
	ip := setUp(t, a)
	Serve(t, a.NetNS, servePort, "hello from a")
	DialEventually(t, "", fmt.Sprintf("%s:%d", ip, servePort), "hello from a")
}

func podsReachEachOther(t *testing.T, env Env) {
	a, b := newPod(t, env, "a"), newPod(t, env, "b")
	ipA, ipB := setUp(t, a), setUp(t, b)
	Serve(t, a.NetNS, servePort, "hello from a")
	Serve(t, b.NetNS, servePort, "hello from b")
	DialEventually(t, b.NetNS, fmt.Sprintf("%s:%d", ipA, servePort), "hello from a")
	DialEventually(t, a.NetNS, fmt.Sprintf("%s:%d", ipB, servePort), "hello from b")
}

func hostPort(t *testing.T, env Env) {
	hp := FreePort(t)
	a := newPod(t, env, "a", network.PortMapping{HostPort: int32(hp), ContainerPort: servePort, Protocol: "TCP"})
	b := newPod(t, env, "b")
	setUp(t, a)
	setUp(t, b)
	Serve(t, a.NetNS, servePort, "hello from a")
	node := NodeIP(t)
	for _, from := range []struct{ name, netns, addr string }{
		{"host via node IP", "", fmt.Sprintf("%s:%d", node, hp)},
		{"host via localhost", "", fmt.Sprintf("127.0.0.1:%d", hp)},
		{"other pod via node IP", b.NetNS, fmt.Sprintf("%s:%d", node, hp)},
		{"same pod via node IP (hairpin)", a.NetNS, fmt.Sprintf("%s:%d", node, hp)},
	} {
		t.Run(from.name, func(t *testing.T) { DialEventually(t, from.netns, from.addr, "hello from a") })
	}
	// TearDown without the ports: the implementation must remember what it published.
	bare := a.Pod
	bare.Ports = nil
	if err := env.Net.TearDown(t.Context(), bare); err != nil {
		t.Fatalf("TearDown(a): %v", err)
	}
	if got, err := Dial(t.Context(), "", fmt.Sprintf("%s:%d", node, hp)); err == nil {
		t.Fatalf("hostPort %d still answers %q after TearDown", hp, got)
	}
}
