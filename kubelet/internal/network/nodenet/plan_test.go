package nodenet

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var cmpAddrs = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
var cmpPrefixes = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func diffPlan(want, got any) string { return cmp.Diff(want, got, cmpAddrs, cmpPrefixes) }

func peer(name, cidr, ip string) Peer {
	p := Peer{Name: name}
	if cidr != "" {
		p.PodCIDR = netip.MustParsePrefix(cidr)
	}
	if ip != "" {
		p.InternalIP = netip.MustParseAddr(ip)
	}
	return p
}

func hostRoute(cidr, gw string) Route {
	return Route{Dst: netip.MustParsePrefix(cidr), Gw: netip.MustParseAddr(gw)}
}

func TestPeerOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		node corev1.Node
		want Peer
	}{
		{"complete", corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "a"}, {Type: corev1.NodeInternalIP, Address: "fd00::1"},
				{Type: corev1.NodeInternalIP, Address: "192.168.5.2"}, {Type: corev1.NodeInternalIP, Address: "192.168.5.3"}}},
		}, peer("a", "10.244.1.0/24", "192.168.5.2")},
		{"unmasked pod CIDR", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.2.7/24"}},
			peer("b", "10.244.2.0/24", "")},
		{"nothing yet", corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, peer("c", "", "")},
		{"IPv6 and garbage are not used", corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: corev1.NodeSpec{PodCIDR: "fd00:10::/64"},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "not-an-ip"}}},
		}, peer("d", "", "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := diffPlan(tt.want, PeerOf(&tt.node)); d != "" {
				t.Errorf("PeerOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestDesiredHostGW(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	for _, tt := range []struct {
		name  string
		peers []Peer
		want  []Route
	}{
		{"alone", []Peer{self}, nil},
		{"two others, sorted by destination", []Peer{self, peer("c", "10.244.2.0/24", "192.168.5.3"), peer("b", "10.244.1.0/24", "192.168.5.2")},
			[]Route{hostRoute("10.244.1.0/24", "192.168.5.2"), hostRoute("10.244.2.0/24", "192.168.5.3")}},
		{"a node without a pod CIDR yet", []Peer{self, peer("b", "", "192.168.5.2")}, nil},
		{"a node without an InternalIP", []Peer{self, peer("b", "10.244.1.0/24", "")}, nil},
		{"a node on this very host", []Peer{self, peer("b", "10.244.1.0/24", "192.168.5.1")}, nil},
		{"a node claiming this node's pod CIDR", []Peer{self, peer("b", "10.244.0.0/24", "192.168.5.2")}, nil},
		{"a node whose pod CIDR covers this node's", []Peer{self, peer("b", "10.244.0.0/16", "192.168.5.2")}, nil},
		{"two nodes with one pod CIDR: the first by name", []Peer{self, peer("z", "10.244.1.0/24", "192.168.5.9"), peer("b", "10.244.1.0/24", "192.168.5.2")},
			[]Route{hostRoute("10.244.1.0/24", "192.168.5.2")}},
		{"this node's own entry is never routed even with another name's address", []Peer{peer("self", "10.244.7.0/24", "192.168.5.7")}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Desired(Config{Mode: HostGW}, self, tt.peers)
			if d := diffPlan(Plan{Routes: tt.want}, got); d != "" {
				t.Errorf("Desired (-want +got):\n%s", d)
			}
		})
	}
}

func TestDesiredHostGWFollowsNodes(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	b := peer("b", "10.244.1.0/24", "192.168.5.2")
	c := peer("c", "10.244.2.0/24", "192.168.5.3")
	steps := []struct {
		name        string
		peers       []Peer
		wantReplace []Route
		wantDelete  []Route
	}{
		{"b joins", []Peer{self, b}, []Route{hostRoute("10.244.1.0/24", "192.168.5.2")}, nil},
		{"c joins", []Peer{self, b, c}, []Route{hostRoute("10.244.2.0/24", "192.168.5.3")}, nil},
		{"nothing changes", []Peer{self, b, c}, nil, nil},
		{"b's address changes", []Peer{self, peer("b", "10.244.1.0/24", "192.168.5.20"), c}, []Route{hostRoute("10.244.1.0/24", "192.168.5.20")}, nil},
		{"c leaves", []Peer{self, peer("b", "10.244.1.0/24", "192.168.5.20")}, nil, []Route{hostRoute("10.244.2.0/24", "192.168.5.3")}},
		{"b loses its address", []Peer{self, peer("b", "10.244.1.0/24", "")}, nil, []Route{hostRoute("10.244.1.0/24", "192.168.5.20")}},
	}
	var have Plan
	for _, s := range steps {
		want := Desired(Config{}, self, s.peers)
		ch := Diff(want, have)
		if d := diffPlan(Changes{ReplaceRoutes: s.wantReplace, DeleteRoutes: s.wantDelete}, ch); d != "" {
			t.Errorf("%s: changes (-want +got):\n%s", s.name, d)
		}
		have = want
	}
}

func TestDesiredVXLAN(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	cfg := Config{Mode: VXLAN}
	vtep := &VTEP{Name: "minik8s.1", VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.5.1"), MAC: "02:6b:c0:a8:05:01",
		Address: netip.MustParseAddr("10.244.0.0")}
	for _, tt := range []struct {
		name  string
		self  Peer
		peers []Peer
		want  Plan
	}{
		{"alone: the device only", self, []Peer{self}, Plan{VTEP: vtep}},
		{"two others", self, []Peer{self, peer("c", "10.244.2.0/24", "10.9.0.3"), peer("b", "10.244.1.0/24", "192.168.5.2")}, Plan{
			VTEP: vtep,
			Routes: []Route{
				{Dst: netip.MustParsePrefix("10.244.1.0/24"), Gw: netip.MustParseAddr("10.244.1.0"), Dev: "minik8s.1", Onlink: true},
				{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gw: netip.MustParseAddr("10.244.2.0"), Dev: "minik8s.1", Onlink: true},
			},
			Neighbors: []Neighbor{
				{IP: netip.MustParseAddr("10.244.1.0"), MAC: "02:6b:c0:a8:05:02"},
				{IP: netip.MustParseAddr("10.244.2.0"), MAC: "02:6b:0a:09:00:03"},
			},
			FDB: []FDB{
				{MAC: "02:6b:0a:09:00:03", Dst: netip.MustParseAddr("10.9.0.3")},
				{MAC: "02:6b:c0:a8:05:02", Dst: netip.MustParseAddr("192.168.5.2")},
			},
		}},
		{"skips as host-gw does", self, []Peer{self, peer("b", "", "192.168.5.2"), peer("c", "10.244.2.0/24", ""), peer("d", "10.244.3.0/24", "192.168.5.1")},
			Plan{VTEP: vtep}},
		{"no pod CIDR of its own yet: the device has no address", peer("self", "", "192.168.5.1"), nil,
			Plan{VTEP: &VTEP{Name: "minik8s.1", VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.5.1"), MAC: "02:6b:c0:a8:05:01"}}},
		{"no InternalIP of its own: nothing", peer("self", "10.244.0.0/24", ""), []Peer{peer("b", "10.244.1.0/24", "192.168.5.2")}, Plan{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := diffPlan(tt.want, Desired(cfg, tt.self, tt.peers)); d != "" {
				t.Errorf("Desired (-want +got):\n%s", d)
			}
		})
	}
}

func TestDiffVXLAN(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	cfg := Config{Mode: VXLAN}
	before := Desired(cfg, self, []Peer{peer("b", "10.244.1.0/24", "192.168.5.2"), peer("c", "10.244.2.0/24", "192.168.5.3")})
	// b moves to another address, c leaves.
	after := Desired(cfg, self, []Peer{peer("b", "10.244.1.0/24", "192.168.5.20")})
	want := Changes{
		SetNeighbors:    []Neighbor{{IP: netip.MustParseAddr("10.244.1.0"), MAC: "02:6b:c0:a8:05:14"}},
		DeleteNeighbors: []Neighbor{{IP: netip.MustParseAddr("10.244.2.0"), MAC: "02:6b:c0:a8:05:03"}},
		AddFDB:          []FDB{{MAC: "02:6b:c0:a8:05:14", Dst: netip.MustParseAddr("192.168.5.20")}},
		DeleteFDB: []FDB{{MAC: "02:6b:c0:a8:05:02", Dst: netip.MustParseAddr("192.168.5.2")},
			{MAC: "02:6b:c0:a8:05:03", Dst: netip.MustParseAddr("192.168.5.3")}},
		DeleteRoutes: []Route{{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gw: netip.MustParseAddr("10.244.2.0"), Dev: "minik8s.1", Onlink: true}},
	}
	if d := diffPlan(want, Diff(after, before)); d != "" {
		t.Errorf("Diff (-want +got):\n%s", d)
	}
	if !Diff(after, after).Empty() {
		t.Errorf("Diff of a plan with itself is not empty: %+v", Diff(after, after))
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"host-gw": HostGW, "vxlan": VXLAN} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("udp"); err == nil {
		t.Error("ParseMode(udp) accepted an unknown mode")
	}
}
