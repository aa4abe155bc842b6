package nodenet_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coreos/go-iptables/iptables"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/network/networktest"
	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/shared/netns"
	"minik8s.io/shared/netns/netnstest"
)

// nsIPTables runs go-iptables inside a network namespace: each call execs iptables from a
// thread switched into it.
type nsIPTables struct {
	path string
	ipt  *iptables.IPTables
}

func (n nsIPTables) in(fn func() error) error { return netns.Do(n.path, fn) }

func (n nsIPTables) ChainExists(table, chain string) (ok bool, err error) {
	err = n.in(func() error { ok, err = n.ipt.ChainExists(table, chain); return err })
	return ok, err
}
func (n nsIPTables) NewChain(table, chain string) error {
	return n.in(func() error { return n.ipt.NewChain(table, chain) })
}
func (n nsIPTables) List(table, chain string) (out []string, err error) {
	err = n.in(func() error { out, err = n.ipt.List(table, chain); return err })
	return out, err
}
func (n nsIPTables) Insert(table, chain string, pos int, rule ...string) error {
	return n.in(func() error { return n.ipt.Insert(table, chain, pos, rule...) })
}
func (n nsIPTables) Append(table, chain string, rule ...string) error {
	return n.in(func() error { return n.ipt.Append(table, chain, rule...) })
}
func (n nsIPTables) DeleteById(table, chain string, id int) error {
	return n.in(func() error { return n.ipt.DeleteById(table, chain, id) })
}

// needRoot skips under -short and fails, saying why, where the test cannot make namespaces.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root, iproute2 and iptables (-short)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the pod network integration tests need root (network namespaces, routes, iptables); run them as root or with -short")
	}
	netnstest.Need(t, "ip", "iptables")
}

// newNSIPTables is iptables in the namespace at path.
func newNSIPTables(t *testing.T, path string) nsIPTables {
	t.Helper()
	ipt, err := iptables.New()
	if err != nil {
		t.Fatalf("iptables: %v (the pod network integration tests need iptables)", err)
	}
	return nsIPTables{path: path, ipt: ipt}
}

// run runs a command and fails the test with its output when it fails.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lab is two nodes on a switch, each with one pod behind it, all in network namespaces the
// test makes and deletes:
//
//	podA (10.250.1.2) -- nodeA (10.250.1.1 | 198.18.0.1) -- switch -- (198.18.0.2 | 10.250.2.1) nodeB -- podB (10.250.2.2)
//
// The nodes forward with a FORWARD policy of DROP, as Docker leaves it; nothing but the
// reconcilers route between the pod CIDRs.
type lab struct {
	sw, a, b, podA, podB string // namespace paths
	nodes                *fakeNodes
}

const labCluster = "10.250.0.0/16"

func newLab(t *testing.T) *lab {
	t.Helper()
	needRoot(t)
	l := &lab{sw: netnstest.New(t), a: netnstest.New(t), b: netnstest.New(t),
		podA: netnstest.New(t), podB: netnstest.New(t), nodes: &fakeNodes{nodes: map[string]*corev1.Node{}}}
	sw := filepath.Base(l.sw)
	run(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", sw, "link", "set", "br0", "up")
	for i, node := range []struct{ ns, pod, ip, gw, podIP string }{
		{l.a, l.podA, "198.18.0.1", "10.250.1.1", "10.250.1.2"},
		{l.b, l.podB, "198.18.0.2", "10.250.2.1", "10.250.2.2"},
	} {
		ns, pod := filepath.Base(node.ns), filepath.Base(node.pod)
		port := fmt.Sprintf("port%d", i)
		run(t, "ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw)
		run(t, "ip", "-n", sw, "link", "set", port, "master", "br0", "up")
		run(t, "ip", "-n", ns, "addr", "add", node.ip+"/24", "dev", "eth0")
		run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		run(t, "ip", "-n", ns, "link", "add", "pod0", "type", "veth", "peer", "name", "eth0", "netns", pod)
		run(t, "ip", "-n", ns, "addr", "add", node.gw+"/24", "dev", "pod0")
		run(t, "ip", "-n", ns, "link", "set", "pod0", "up")
		run(t, "ip", "-n", pod, "addr", "add", node.podIP+"/24", "dev", "eth0")
		run(t, "ip", "-n", pod, "link", "set", "eth0", "up")
		run(t, "ip", "-n", pod, "link", "set", "lo", "up")
		run(t, "ip", "-n", pod, "route", "add", "default", "via", node.gw)
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		run(t, "ip", "netns", "exec", ns, "iptables", "-w", "5", "-P", "FORWARD", "DROP")
	}
	l.nodes.set("a", "10.250.1.0/24", "198.18.0.1")
	l.nodes.set("b", "10.250.2.0/24", "198.18.0.2")
	l.nodes.synced = true
	return l
}

// reconciler makes the reconciler of the node whose namespace is ns.
func (l *lab) reconciler(t *testing.T, ns, name string, mode nodenet.Mode) (*nodenet.Reconciler, *nodenet.Netlink, nodenet.IPTables) {
	t.Helper()
	k, err := nodenet.NewNetlink(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	nsipt := newNSIPTables(t, ns)
	self := func() nodenet.Peer {
		for _, n := range l.nodes.List() {
			if n.Name == name {
				return nodenet.PeerOf(n)
			}
		}
		return nodenet.Peer{Name: name}
	}
	r, err := nodenet.NewReconciler(nodenet.ReconcilerConfig{Config: nodenet.Config{Mode: mode}, ClusterCIDR: netip.MustParsePrefix(labCluster)}, k, nsipt, self, l.nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r, k, nsipt
}

// peerServer answers every connection with the address it came from.
func peerServer(t *testing.T, ns, ip string, port int) string {
	t.Helper()
	networktest.ServeFunc(t, ns, port, func(c net.Conn) string {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		return "from " + host
	})
	return net.JoinHostPort(ip, fmt.Sprint(port))
}

func testPodNetwork(t *testing.T, mode nodenet.Mode) {
	l := newLab(t)
	ra, ka, ipta := l.reconciler(t, l.a, "a", mode)
	rb, kb, _ := l.reconciler(t, l.b, "b", mode)
	for _, r := range []*nodenet.Reconciler{ra, rb} {
		if err := r.Sync(t.Context()); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	port := networktest.FreePort(t)
	podA := peerServer(t, l.podA, "10.250.1.2", port)
	nodeA := peerServer(t, l.a, "198.18.0.1", port+1)

	// Pod to pod across the nodes: routed, forwarded despite DROP, and not NATed.
	networktest.DialEventually(t, l.podB, podA, "from 10.250.2.2")
	// Pod to an address outside the cluster CIDR: masqueraded to its node's address.
	networktest.DialEventually(t, l.podB, nodeA, "from 198.18.0.2")

	routesOf := func(k *nodenet.Netlink) []string {
		rs, err := k.Routes()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	wantB := []string{"10.250.1.0/24 via 198.18.0.1"}
	if mode == nodenet.VXLAN {
		wantB = []string{"10.250.1.0/24 via 10.250.1.0 dev minik8s.1 onlink"}
	}
	if d := cmp.Diff(wantB, routesOf(kb)); d != "" {
		t.Errorf("node b's routes (-want +got):\n%s", d)
	}
	if mode == nodenet.VXLAN {
		neigh, fdb, err := kb.VTEPEntries("minik8s.1")
		if err != nil {
			t.Fatal(err)
		}
		want := []nodenet.Neighbor{{IP: netip.MustParseAddr("10.250.1.0"), MAC: "02:6b:c6:12:00:01"}}
		if d := diffPlan(want, neigh); d != "" {
			t.Errorf("node b's VXLAN neighbours (-want +got):\n%s", d)
		}
		wantFDB := []nodenet.FDB{{MAC: "02:6b:c6:12:00:01", Dst: netip.MustParseAddr("198.18.0.1")}}
		if d := diffPlan(wantFDB, fdb); d != "" {
			t.Errorf("node b's VXLAN forwarding entries (-want +got):\n%s", d)
		}
		out := run(t, "ip", "-n", filepath.Base(l.b), "-d", "link", "show", "minik8s.1")
		for _, want := range []string{"vxlan id 1 ", "local 198.18.0.2", "dstport 8472", "nolearning", "mtu 1450", "02:6b:c6:12:00:02"} {
			if !strings.Contains(out, want) {
				t.Errorf("node b's VXLAN device lacks %q:\n%s", want, out)
			}
		}
	}

	// Applying the rules again changes nothing: real iptables lists them as we compare them.
	if changed, err := nodenet.ApplyRules(ipta, nodenet.Rules(netip.MustParsePrefix(labCluster))); err != nil || changed {
		t.Errorf("second ApplyRules on node a = %v, %v; want no change", changed, err)
	}
	out := run(t, "ip", "netns", "exec", filepath.Base(l.a), "iptables", "-w", "5", "-t", "nat", "-S", nodenet.PostroutingChain)
	if !strings.Contains(out, "-s 10.250.0.0/16 ! -d 224.0.0.0/4") || !strings.Contains(out, "-j MASQUERADE") {
		t.Errorf("node a's %s:\n%s", nodenet.PostroutingChain, out)
	}

	// Node a leaves: b's route to it goes, and so does the way there.
	l.nodes.remove("a")
	if err := rb.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := routesOf(kb); len(got) != 0 {
		t.Errorf("node b's routes after a left: %q, want none", got)
	}
	if _, err := networktest.Dial(t.Context(), l.podB, podA); err == nil {
		t.Errorf("pod b still reaches pod a after node a left")
	}
	if mode == nodenet.VXLAN {
		if neigh, fdb, err := kb.VTEPEntries("minik8s.1"); err != nil || len(neigh)+len(fdb) != 0 {
			t.Errorf("node b's VXLAN entries after a left: %v %v %v, want none", neigh, fdb, err)
		}
	}
	_ = ka
}

func TestIntegrationHostGW(t *testing.T) { testPodNetwork(t, nodenet.HostGW) }

func TestIntegrationVXLAN(t *testing.T) { testPodNetwork(t, nodenet.VXLAN) }
