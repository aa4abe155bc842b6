package nodenet_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/network/nodenet"
)

var cmpAddrs = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
var cmpPrefixes = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func diffPlan(want, got any) string { return cmp.Diff(want, got, cmpAddrs, cmpPrefixes) }

func peer(name, cidr, ip string) nodenet.Peer {
	p := nodenet.Peer{Name: name}
	if cidr != "" {
		p.PodCIDR = netip.MustParsePrefix(cidr)
	}
	if ip != "" {
		p.InternalIP = netip.MustParseAddr(ip)
	}
	return p
}

func hostRoute(cidr, gw string) nodenet.Route {
	return nodenet.Route{Dst: netip.MustParsePrefix(cidr), Gw: netip.MustParseAddr(gw)}
}

func TestPeerOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		node corev1.Node
		want nodenet.Peer
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
			if d := diffPlan(tt.want, nodenet.PeerOf(&tt.node)); d != "" {
				t.Errorf("PeerOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestDesiredHostGW(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	for _, tt := range []struct {
		name  string
		peers []nodenet.Peer
		want  []nodenet.Route
	}{
		{"alone", []nodenet.Peer{self}, nil},
		{"two others, sorted by destination", []nodenet.Peer{self, peer("c", "10.244.2.0/24", "192.168.5.3"), peer("b", "10.244.1.0/24", "192.168.5.2")},
			[]nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.2"), hostRoute("10.244.2.0/24", "192.168.5.3")}},
		{"a node without a pod CIDR yet", []nodenet.Peer{self, peer("b", "", "192.168.5.2")}, nil},
		{"a node without an InternalIP", []nodenet.Peer{self, peer("b", "10.244.1.0/24", "")}, nil},
		{"a node on this very host", []nodenet.Peer{self, peer("b", "10.244.1.0/24", "192.168.5.1")}, nil},
		{"a node claiming this node's pod CIDR", []nodenet.Peer{self, peer("b", "10.244.0.0/24", "192.168.5.2")}, nil},
		{"a node whose pod CIDR covers this node's", []nodenet.Peer{self, peer("b", "10.244.0.0/16", "192.168.5.2")}, nil},
		{"two nodes with one pod CIDR: the first by name", []nodenet.Peer{self, peer("z", "10.244.1.0/24", "192.168.5.9"), peer("b", "10.244.1.0/24", "192.168.5.2")},
			[]nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.2")}},
		{"this node's own entry is never routed even with another name's address", []nodenet.Peer{peer("self", "10.244.7.0/24", "192.168.5.7")}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := nodenet.Desired(nodenet.Config{Mode: nodenet.HostGW}, self, tt.peers)
			if d := diffPlan(nodenet.Plan{Routes: tt.want}, got); d != "" {
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
		peers       []nodenet.Peer
		wantReplace []nodenet.Route
		wantDelete  []nodenet.Route
	}{
		{"b joins", []nodenet.Peer{self, b}, []nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.2")}, nil},
		{"c joins", []nodenet.Peer{self, b, c}, []nodenet.Route{hostRoute("10.244.2.0/24", "192.168.5.3")}, nil},
		{"nothing changes", []nodenet.Peer{self, b, c}, nil, nil},
		{"b's address changes", []nodenet.Peer{self, peer("b", "10.244.1.0/24", "192.168.5.20"), c}, []nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.20")}, nil},
		{"c leaves", []nodenet.Peer{self, peer("b", "10.244.1.0/24", "192.168.5.20")}, nil, []nodenet.Route{hostRoute("10.244.2.0/24", "192.168.5.3")}},
		{"b loses its address", []nodenet.Peer{self, peer("b", "10.244.1.0/24", "")}, nil, []nodenet.Route{hostRoute("10.244.1.0/24", "192.168.5.20")}},
	}
	var have nodenet.Plan
	for _, s := range steps {
		want := nodenet.Desired(nodenet.Config{}, self, s.peers)
		ch := nodenet.Diff(want, have)
		if d := diffPlan(nodenet.Changes{ReplaceRoutes: s.wantReplace, DeleteRoutes: s.wantDelete}, ch); d != "" {
			t.Errorf("%s: changes (-want +got):\n%s", s.name, d)
		}
		have = want
	}
}

func TestDesiredVXLAN(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	cfg := nodenet.Config{Mode: nodenet.VXLAN}
	vtep := &nodenet.VTEP{Name: "minik8s.1", VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.5.1"), MAC: "02:6b:c0:a8:05:01",
		Address: netip.MustParseAddr("10.244.0.0")}
	for _, tt := range []struct {
		name  string
		self  nodenet.Peer
		peers []nodenet.Peer
		want  nodenet.Plan
	}{
		{"alone: the device only", self, []nodenet.Peer{self}, nodenet.Plan{VTEP: vtep}},
		{"two others", self, []nodenet.Peer{self, peer("c", "10.244.2.0/24", "10.9.0.3"), peer("b", "10.244.1.0/24", "192.168.5.2")}, nodenet.Plan{
			VTEP: vtep,
			Routes: []nodenet.Route{
				{Dst: netip.MustParsePrefix("10.244.1.0/24"), Gw: netip.MustParseAddr("10.244.1.0"), Dev: "minik8s.1", Onlink: true},
				{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gw: netip.MustParseAddr("10.244.2.0"), Dev: "minik8s.1", Onlink: true},
			},
			Neighbors: []nodenet.Neighbor{
				{IP: netip.MustParseAddr("10.244.1.0"), MAC: "02:6b:c0:a8:05:02"},
				{IP: netip.MustParseAddr("10.244.2.0"), MAC: "02:6b:0a:09:00:03"},
			},
			FDB: []nodenet.FDB{
				{MAC: "02:6b:0a:09:00:03", Dst: netip.MustParseAddr("10.9.0.3")},
				{MAC: "02:6b:c0:a8:05:02", Dst: netip.MustParseAddr("192.168.5.2")},
			},
		}},
		{"skips as host-gw does", self, []nodenet.Peer{self, peer("b", "", "192.168.5.2"), peer("c", "10.244.2.0/24", ""), peer("d", "10.244.3.0/24", "192.168.5.1")},
			nodenet.Plan{VTEP: vtep}},
		{"no pod CIDR of its own yet: the device has no address", peer("self", "", "192.168.5.1"), nil,
			nodenet.Plan{VTEP: &nodenet.VTEP{Name: "minik8s.1", VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.5.1"), MAC: "02:6b:c0:a8:05:01"}}},
		{"no InternalIP of its own: nothing", peer("self", "10.244.0.0/24", ""), []nodenet.Peer{peer("b", "10.244.1.0/24", "192.168.5.2")}, nodenet.Plan{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := diffPlan(tt.want, nodenet.Desired(cfg, tt.self, tt.peers)); d != "" {
				t.Errorf("Desired (-want +got):\n%s", d)
			}
		})
	}
}

func TestDiffVXLAN(t *testing.T) {
	self := peer("self", "10.244.0.0/24", "192.168.5.1")
	cfg := nodenet.Config{Mode: nodenet.VXLAN}
	before := nodenet.Desired(cfg, self, []nodenet.Peer{peer("b", "10.244.1.0/24", "192.168.5.2"), peer("c", "10.244.2.0/24", "192.168.5.3")})
	// b moves to another address, c leaves.
	after := nodenet.Desired(cfg, self, []nodenet.Peer{peer("b", "10.244.1.0/24", "192.168.5.20")})
	want := nodenet.Changes{
		SetNeighbors:    []nodenet.Neighbor{{IP: netip.MustParseAddr("10.244.1.0"), MAC: "02:6b:c0:a8:05:14"}},
		DeleteNeighbors: []nodenet.Neighbor{{IP: netip.MustParseAddr("10.244.2.0"), MAC: "02:6b:c0:a8:05:03"}},
		AddFDB:          []nodenet.FDB{{MAC: "02:6b:c0:a8:05:14", Dst: netip.MustParseAddr("192.168.5.20")}},
		DeleteFDB: []nodenet.FDB{{MAC: "02:6b:c0:a8:05:02", Dst: netip.MustParseAddr("192.168.5.2")},
			{MAC: "02:6b:c0:a8:05:03", Dst: netip.MustParseAddr("192.168.5.3")}},
		DeleteRoutes: []nodenet.Route{{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gw: netip.MustParseAddr("10.244.2.0"), Dev: "minik8s.1", Onlink: true}},
	}
	if d := diffPlan(want, nodenet.Diff(after, before)); d != "" {
		t.Errorf("Diff (-want +got):\n%s", d)
	}
	if !nodenet.Diff(after, after).Empty() {
		t.Errorf("Diff of a plan with itself is not empty: %+v", nodenet.Diff(after, after))
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]nodenet.Mode{"host-gw": nodenet.HostGW, "vxlan": nodenet.VXLAN} {
		if got, err := nodenet.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := nodenet.ParseMode("udp"); err == nil {
		t.Error("ParseMode(udp) accepted an unknown mode")
	}
}
