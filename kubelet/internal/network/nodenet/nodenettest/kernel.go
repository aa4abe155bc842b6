package nodenettest

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"minik8s.io/kubelet/internal/network/nodenet"
)

// KernelEnv is one kernel under test, fresh: none of our routes, no VXLAN device.
type KernelEnv struct {
	Kernel nodenet.Kernel
	// Addr is the address, with its subnet, of the node's one interface: gateways inside the
	// subnet are reachable, and it is the local address of a VXLAN device.
	Addr netip.Prefix
}

// KernelFactory returns a fresh KernelEnv; it registers its own cleanup.
type KernelFactory func(t *testing.T) KernelEnv

// RunKernel runs the kernel contract, each case on a kernel of its own.
func RunKernel(t *testing.T, newEnv KernelFactory) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *kernel)
	}{
		{"NoRoutesOfOursAtFirst", testNoRoutes},
		{"ReplaceRouteAddsAndChanges", testReplaceRoute},
		{"DeleteRouteTwice", testDeleteRoute},
		{"UnreachableGatewayFails", testUnreachableGateway},
		{"RouteThroughMissingDeviceFails", testMissingDevice},
		{"VTEPEntriesAndRoutes", testVTEPEntries},
		{"FDBKeepsOneDestinationPerMAC", testFDBPerMAC},
		{"VTEPNeedsTheNodeAddress", testVTEPNeedsAddr},
		{"VTEPKeptForANewMACOrAddress", testVTEPInPlace},
		{"VTEPRemadeForANewVNI", testVTEPRemade},
		{"DeleteVTEPTakesWhatUsedIt", testDeleteVTEP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			tc.fn(t, &kernel{t: t, k: env.Kernel, addr: env.Addr})
		})
	}
}

// kernel drives one KernelEnv, failing the test on unexpected errors.
type kernel struct {
	t    *testing.T
	k    nodenet.Kernel
	addr netip.Prefix
}

var cmpNet = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmpopts.EquateEmpty(),
}

// peer is the n-th other address in the node's subnet: a reachable gateway.
func (h *kernel) peer(n int) netip.Addr {
	a := h.addr.Masked().Addr()
	for range n + 1 {
		a = a.Next()
		if a == h.addr.Addr() {
			a = a.Next()
		}
	}
	return a
}

// unreachable is an address no connected subnet of a scratch node holds (TEST-NET-3).
var unreachable = netip.MustParseAddr("203.0.113.7")

func route(dst string, gw netip.Addr) nodenet.Route {
	return nodenet.Route{Dst: netip.MustParsePrefix(dst), Gw: gw}
}

func (h *kernel) wantRoutes(what string, want ...nodenet.Route) {
	h.t.Helper()
	got, err := h.k.Routes()
	if err != nil {
		h.t.Fatalf("Routes: %v", err)
	}
	// Compared as sets: the kernel lists in its own order.
	g, w := nodenet.Plan{Routes: got}, nodenet.Plan{Routes: want}
	g.Sort()
	w.Sort()
	if d := cmp.Diff(w.Routes, g.Routes, cmpNet); d != "" {
		h.t.Errorf("%s: routes (-want +got):\n%s", what, d)
	}
}

func (h *kernel) wantEntries(what, dev string, neigh []nodenet.Neighbor, fdb []nodenet.FDB) {
	h.t.Helper()
	n, f, err := h.k.VTEPEntries(dev)
	if err != nil {
		h.t.Fatalf("VTEPEntries(%s): %v", dev, err)
	}
	got, want := nodenet.Plan{Neighbors: n, FDB: f}, nodenet.Plan{Neighbors: neigh, FDB: fdb}
	got.Sort()
	want.Sort()
	if d := cmp.Diff(want, got, cmpNet); d != "" {
		h.t.Errorf("%s: entries on %s (-want +got):\n%s", what, dev, d)
	}
}

func (h *kernel) must(what string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

func testNoRoutes(t *testing.T, h *kernel) {
	// The kernel has routes of its own (the interface's subnet); none is ours.
	h.wantRoutes("fresh kernel")
}

func testReplaceRoute(t *testing.T, h *kernel) {
	r := route("10.250.1.0/24", h.peer(1))
	h.must("ReplaceRoute", h.k.ReplaceRoute(r))
	h.wantRoutes("added", r)
	moved := route("10.250.1.0/24", h.peer(2))
	h.must("ReplaceRoute to another gateway", h.k.ReplaceRoute(moved))
	h.must("ReplaceRoute again", h.k.ReplaceRoute(moved))
	other := route("10.250.2.0/23", h.peer(1))
	h.must("ReplaceRoute", h.k.ReplaceRoute(other))
	h.wantRoutes("changed in place", moved, other)
}

func testDeleteRoute(t *testing.T, h *kernel) {
	r, keep := route("10.250.1.0/24", h.peer(1)), route("10.250.2.0/24", h.peer(1))
	h.must("ReplaceRoute", h.k.ReplaceRoute(r))
	h.must("ReplaceRoute", h.k.ReplaceRoute(keep))
	h.must("DeleteRoute", h.k.DeleteRoute(r))
	h.wantRoutes("deleted", keep)
	h.must("DeleteRoute of a route already gone", h.k.DeleteRoute(r))
	h.wantRoutes("deleted twice", keep)
}

func testUnreachableGateway(t *testing.T, h *kernel) {
	r := route("10.250.1.0/24", unreachable)
	err := h.k.ReplaceRoute(r)
	if err == nil || !strings.Contains(err.Error(), "10.250.1.0/24") {
		t.Errorf("ReplaceRoute via %s = %v, want an error naming the route", unreachable, err)
	}
	h.wantRoutes("after a refused route")
}

func testMissingDevice(t *testing.T, h *kernel) {
	r := nodenet.Route{Dst: netip.MustParsePrefix("10.250.1.0/24"), Gw: netip.MustParseAddr("10.250.1.0"), Dev: "mk8s-none", Onlink: true}
	if err := h.k.ReplaceRoute(r); err == nil {
		t.Errorf("ReplaceRoute through a missing device succeeded")
	}
	h.wantRoutes("after a refused route")
	n := nodenet.Neighbor{IP: netip.MustParseAddr("10.250.1.0"), MAC: "02:6b:00:00:00:01"}
	if err := h.k.SetNeighbor("mk8s-none", n); err == nil {
		t.Errorf("SetNeighbor on a missing device succeeded")
	}
	if err := h.k.SetFDB("mk8s-none", nodenet.FDB{MAC: n.MAC, Dst: h.peer(1)}); err == nil {
		t.Errorf("SetFDB on a missing device succeeded")
	}
	h.wantEntries("missing device", "mk8s-none", nil, nil)
	h.must("DeleteNeighbor on a missing device", h.k.DeleteNeighbor("mk8s-none", n))
	h.must("DeleteVTEP of a missing device", h.k.DeleteVTEP("mk8s-none"))
}

// vtep is the node's VXLAN device as Desired makes it.
func (h *kernel) vtep() nodenet.VTEP {
	local := h.addr.Addr()
	return nodenet.VTEP{Name: nodenet.DefaultVXLANDevice, VNI: nodenet.DefaultVNI, Port: nodenet.DefaultVXLANPort,
		Local: local, MAC: nodenet.VTEPMAC(local), Address: netip.MustParseAddr("10.250.0.0")}
}

// peerEntries installs what the reconciler installs for one peer: its neighbour, forwarding
// entry and the on-link route to its pod CIDR through the device.
func (h *kernel) peerEntries(dev string, n int) (nodenet.Neighbor, nodenet.FDB, nodenet.Route) {
	h.t.Helper()
	ip := h.peer(n)
	vtep := netip.AddrFrom4([4]byte{10, 250, byte(n), 0})
	nb := nodenet.Neighbor{IP: vtep, MAC: nodenet.VTEPMAC(ip)}
	f := nodenet.FDB{MAC: nb.MAC, Dst: ip}
	r := nodenet.Route{Dst: netip.PrefixFrom(vtep, 24), Gw: vtep, Dev: dev, Onlink: true}
	h.must("SetFDB", h.k.SetFDB(dev, f))
	h.must("SetNeighbor", h.k.SetNeighbor(dev, nb))
	h.must("ReplaceRoute", h.k.ReplaceRoute(r))
	return nb, f, r
}

func testVTEPEntries(t *testing.T, h *kernel) {
	v := h.vtep()
	h.must("EnsureVTEP", h.k.EnsureVTEP(v))
	h.must("EnsureVTEP again", h.k.EnsureVTEP(v))
	h.wantEntries("new device", v.Name, nil, nil)
	n1, f1, r1 := h.peerEntries(v.Name, 1)
	n2, f2, r2 := h.peerEntries(v.Name, 2)
	h.wantEntries("two peers", v.Name, []nodenet.Neighbor{n1, n2}, []nodenet.FDB{f1, f2})
	h.wantRoutes("two peers", r1, r2)

	// A peer's VTEP address now answers with another MAC: the neighbour changes in place.
	n1.MAC = "02:6b:00:00:00:99"
	h.must("SetNeighbor with a new MAC", h.k.SetNeighbor(v.Name, n1))
	h.wantEntries("neighbour changed", v.Name, []nodenet.Neighbor{n1, n2}, []nodenet.FDB{f1, f2})

	h.must("DeleteNeighbor", h.k.DeleteNeighbor(v.Name, n2))
	h.must("DeleteFDB", h.k.DeleteFDB(v.Name, f2))
	h.must("DeleteNeighbor again", h.k.DeleteNeighbor(v.Name, n2))
	h.must("DeleteFDB again", h.k.DeleteFDB(v.Name, f2))
	h.wantEntries("second peer gone", v.Name, []nodenet.Neighbor{n1}, []nodenet.FDB{f1})
	// Entries go on their own: the route stays until the reconciler removes it.
	h.wantRoutes("second peer's entries gone", r1, r2)
}

func testFDBPerMAC(t *testing.T, h *kernel) {
	v := h.vtep()
	h.must("EnsureVTEP", h.k.EnsureVTEP(v))
	mac := nodenet.VTEPMAC(h.peer(1))
	old, moved := nodenet.FDB{MAC: mac, Dst: h.peer(1)}, nodenet.FDB{MAC: mac, Dst: h.peer(2)}
	h.must("SetFDB", h.k.SetFDB(v.Name, old))
	h.must("SetFDB to another destination", h.k.SetFDB(v.Name, moved))
	h.wantEntries("MAC sent elsewhere", v.Name, nil, []nodenet.FDB{moved})
	// The reconciler deletes the stale pair after adding the new one: that must not take it.
	h.must("DeleteFDB of the replaced pair", h.k.DeleteFDB(v.Name, old))
	h.wantEntries("stale pair deleted", v.Name, nil, []nodenet.FDB{moved})
}

func testVTEPNeedsAddr(t *testing.T, h *kernel) {
	v := h.vtep()
	v.Local, v.MAC = unreachable, nodenet.VTEPMAC(unreachable)
	if err := h.k.EnsureVTEP(v); err == nil {
		t.Errorf("EnsureVTEP with local address %s, which no interface holds, succeeded", unreachable)
	}
	h.wantEntries("refused device", v.Name, nil, nil)
}

// testVTEPInPlace: the device stays for a new MAC or address, with its forwarding entries,
// but the kernel flushes what depended on the old ones: the neighbours for a new MAC, the
// neighbours and the routes through the device when its address goes. The reconciler reads
// the entries and routes after EnsureVTEP, so it puts them back in the same sync.
func testVTEPInPlace(t *testing.T, h *kernel) {
	v := h.vtep()
	h.must("EnsureVTEP", h.k.EnsureVTEP(v))
	_, f, r := h.peerEntries(v.Name, 1)
	v.MAC = "02:6b:00:00:00:42"
	h.must("EnsureVTEP with a new MAC", h.k.EnsureVTEP(v))
	h.wantEntries("after the MAC change", v.Name, nil, []nodenet.FDB{f})
	h.wantRoutes("after the MAC change", r)
	_, f, _ = h.peerEntries(v.Name, 1)
	v.Address = netip.MustParseAddr("10.250.9.0")
	h.must("EnsureVTEP with a new address", h.k.EnsureVTEP(v))
	h.wantEntries("after the address change", v.Name, nil, []nodenet.FDB{f})
	h.wantRoutes("after the address change")
	n, f, r := h.peerEntries(v.Name, 1)
	h.must("EnsureVTEP unchanged", h.k.EnsureVTEP(v))
	h.wantEntries("unchanged device", v.Name, []nodenet.Neighbor{n}, []nodenet.FDB{f})
	h.wantRoutes("unchanged device", r)
}

// vtepInUse makes the device with one peer's entries, and a host-gw route beside it that
// whatever happens to the device must leave alone.
func (h *kernel) vtepInUse() (nodenet.VTEP, nodenet.Route) {
	h.t.Helper()
	v := h.vtep()
	h.must("EnsureVTEP", h.k.EnsureVTEP(v))
	h.peerEntries(v.Name, 1)
	hostgw := route("10.250.7.0/24", h.peer(1))
	h.must("ReplaceRoute", h.k.ReplaceRoute(hostgw))
	return v, hostgw
}

func testVTEPRemade(t *testing.T, h *kernel) {
	v, hostgw := h.vtepInUse()
	v.VNI = 42
	h.must("EnsureVTEP with a new VNI", h.k.EnsureVTEP(v))
	h.wantEntries("remade device", v.Name, nil, nil)
	h.wantRoutes("remade device", hostgw)
	// The new device works as the old did.
	n, f, r := h.peerEntries(v.Name, 2)
	h.wantEntries("remade device in use", v.Name, []nodenet.Neighbor{n}, []nodenet.FDB{f})
	h.wantRoutes("remade device in use", hostgw, r)
}

func testDeleteVTEP(t *testing.T, h *kernel) {
	v, hostgw := h.vtepInUse()
	h.must("DeleteVTEP", h.k.DeleteVTEP(v.Name))
	h.wantEntries("deleted device", v.Name, nil, nil)
	h.wantRoutes("deleted device", hostgw)
	h.must("DeleteVTEP again", h.k.DeleteVTEP(v.Name))
}
