package nodenet

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Mode is how pod traffic reaches other nodes.
type Mode string

const (
	// HostGW routes each node's pod CIDR through its InternalIP: nodes must share an L2
	// segment (one machine's bridge, most labs).
	HostGW Mode = "host-gw"
	// VXLAN tunnels pod traffic to each node's InternalIP over UDP, for nodes on different
	// segments.
	VXLAN Mode = "vxlan"
)

// ParseMode reads a --network-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case HostGW, VXLAN:
		return m, nil
	}
	return "", fmt.Errorf("network mode %q: want %s or %s", s, HostGW, VXLAN)
}

// RouteProtocol is the rtnetlink protocol number of every route the kubelet installs ("proto
// 107" in `ip route`): the reconciler lists and removes only routes marked with it, so routes
// of others (DHCP, the CNI bridge, an administrator) are never touched.
const RouteProtocol = 107

// VXLAN defaults, as flannel's: the device, its VNI and the UDP port the kernel uses for it.
const (
	DefaultVXLANDevice = "minik8s.1"
	DefaultVNI         = 1
	DefaultVXLANPort   = 8472
	// VXLANOverhead is what encapsulation adds to a packet (outer IPv4, UDP, VXLAN and
	// Ethernet headers): the device's and the pods' MTU are the parent's less this.
	VXLANOverhead = 50
)

// Peer is what the pod network needs of a Node.
type Peer struct {
	Name       string
	PodCIDR    netip.Prefix // invalid when the node has none (yet)
	InternalIP netip.Addr   // invalid when the node reports none
}

// PeerOf reads a Node's name, IPv4 spec.podCIDR and first IPv4 InternalIP; a missing or
// unparsable field stays invalid, and Desired skips such nodes.
func PeerOf(n *corev1.Node) Peer {
	p := Peer{Name: n.Name}
	if c, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil && c.Addr().Is4() {
		p.PodCIDR = c.Masked()
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			p.InternalIP = ip
			break
		}
	}
	return p
}

// Route is a route in the main table. Host-gw routes name only the gateway (the kernel finds
// the interface that reaches it); VXLAN routes go through the device to the peer's VTEP
// address, on-link.
type Route struct {
	Dst    netip.Prefix
	Gw     netip.Addr
	Dev    string
	Onlink bool
}

func (r Route) String() string {
	s := r.Dst.String() + " via " + r.Gw.String()
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Onlink {
		s += " onlink"
	}
	return s
}

// Neighbor is a permanent ARP entry on the VXLAN device: a peer's VTEP address and MAC.
type Neighbor struct {
	IP  netip.Addr
	MAC string
}

// FDB is a permanent forwarding entry on the VXLAN device: frames for a peer's VTEP MAC are
// sent to its InternalIP.
type FDB struct {
	MAC string
	Dst netip.Addr
}

// VTEP is this node's VXLAN device.
type VTEP struct {
	Name string
	VNI  int
	Port int
	// Local is the node's InternalIP: the outer source address, and the parent interface is
	// the one that holds it.
	Local netip.Addr
	MAC   string // VTEPMAC(Local), so every peer knows it without asking
	// Address is the first address of the node's pod CIDR as a /32: the node's own traffic
	// to other nodes' pods leaves with a source inside the cluster. Invalid until the node
	// has its pod CIDR.
	Address netip.Addr
}

// Plan is the kernel state the pod network wants on this node. Slices are sorted.
type Plan struct {
	Routes []Route
	// VTEP, Neighbors and FDB are set in VXLAN mode only.
	VTEP      *VTEP
	Neighbors []Neighbor
	FDB       []FDB
}

// Config is what the plan depends on besides the Nodes.
type Config struct {
	Mode Mode
	// VXLAN device; zero values are the defaults.
	Device string
	VNI    int
	Port   int
}

func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = HostGW
	}
	if c.Device == "" {
		c.Device = DefaultVXLANDevice
	}
	if c.VNI == 0 {
		c.VNI = DefaultVNI
	}
	if c.Port == 0 {
		c.Port = DefaultVXLANPort
	}
	return c
}

// VTEPMAC is the VXLAN device MAC of the node with the given InternalIP: locally administered
// (02:6b, "k"), then the four address bytes. Deriving it from the address spares the nodes
// from publishing it.
func VTEPMAC(ip netip.Addr) string {
	b := ip.As4()
	return net.HardwareAddr{0x02, 0x6b, b[0], b[1], b[2], b[3]}.String()
}

// Desired works out the routes (and in VXLAN mode the device, neighbours and forwarding
// entries) that make every other node's pod CIDR reachable. A node is left out when it is
// this node, when it has no pod CIDR or no InternalIP, when its InternalIP is this node's (a
// second kubelet on the same host: its pods are on a local bridge, there is no gateway to
// route through), or when its pod CIDR overlaps this node's. Two nodes claiming the same pod
// CIDR get one route, to the first by name.
func Desired(cfg Config, self Peer, peers []Peer) Plan {
	cfg = cfg.withDefaults()
	peers = slices.Clone(peers)
	slices.SortFunc(peers, func(a, b Peer) int { return cmp.Compare(a.Name, b.Name) })
	var plan Plan
	if cfg.Mode == VXLAN && self.InternalIP.IsValid() {
		plan.VTEP = &VTEP{Name: cfg.Device, VNI: cfg.VNI, Port: cfg.Port, Local: self.InternalIP, MAC: VTEPMAC(self.InternalIP)}
		if self.PodCIDR.IsValid() {
			plan.VTEP.Address = self.PodCIDR.Addr()
		}
	}
	seen := map[netip.Prefix]bool{}
	for _, p := range peers {
		switch {
		case p.Name == self.Name, !p.PodCIDR.IsValid(), !p.InternalIP.IsValid(),
			p.InternalIP == self.InternalIP, seen[p.PodCIDR],
			self.PodCIDR.IsValid() && p.PodCIDR.Overlaps(self.PodCIDR):
			continue
		}
		seen[p.PodCIDR] = true
		if cfg.Mode != VXLAN {
			plan.Routes = append(plan.Routes, Route{Dst: p.PodCIDR, Gw: p.InternalIP})
			continue
		}
		if plan.VTEP == nil {
			// Without its own InternalIP the node has no tunnel end: nothing can go through.
			continue
		}
		vtep, mac := p.PodCIDR.Addr(), VTEPMAC(p.InternalIP)
		plan.Routes = append(plan.Routes, Route{Dst: p.PodCIDR, Gw: vtep, Dev: cfg.Device, Onlink: true})
		plan.Neighbors = append(plan.Neighbors, Neighbor{IP: vtep, MAC: mac})
		plan.FDB = append(plan.FDB, FDB{MAC: mac, Dst: p.InternalIP})
	}
	plan.Sort()
	return plan
}

// Sort orders the plan's slices as Desired does (routes by destination, neighbours by address,
// forwarding entries by destination then MAC), so a kernel's state compares with a plan.
func (p *Plan) Sort() {
	slices.SortFunc(p.Routes, func(a, b Route) int { return comparePrefix(a.Dst, b.Dst) })
	slices.SortFunc(p.Neighbors, func(a, b Neighbor) int { return a.IP.Compare(b.IP) })
	slices.SortFunc(p.FDB, func(a, b FDB) int {
		return cmp.Or(a.Dst.Compare(b.Dst), cmp.Compare(a.MAC, b.MAC))
	})
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// Changes turn the kernel's current state into a plan's.
type Changes struct {
	// ReplaceRoutes are added or changed in place (a route is known by its destination).
	ReplaceRoutes, DeleteRoutes []Route
	// SetNeighbors are added or changed (known by address).
	SetNeighbors, DeleteNeighbors []Neighbor
	AddFDB, DeleteFDB             []FDB
}

// Empty reports whether there is nothing to do.
func (c Changes) Empty() bool {
	return len(c.ReplaceRoutes)+len(c.DeleteRoutes)+len(c.SetNeighbors)+len(c.DeleteNeighbors)+len(c.AddFDB)+len(c.DeleteFDB) == 0
}

// Diff compares what the kernel has (the routes marked RouteProtocol, the VXLAN device's
// permanent entries) with what is wanted.
func Diff(want, have Plan) Changes {
	var c Changes
	haveRoutes := map[netip.Prefix]Route{}
	for _, r := range have.Routes {
		haveRoutes[r.Dst] = r
	}
	wantRoutes := map[netip.Prefix]bool{}
	for _, r := range want.Routes {
		wantRoutes[r.Dst] = true
		if h, ok := haveRoutes[r.Dst]; !ok || h != r {
			c.ReplaceRoutes = append(c.ReplaceRoutes, r)
		}
	}
	for _, r := range have.Routes {
		if !wantRoutes[r.Dst] {
			c.DeleteRoutes = append(c.DeleteRoutes, r)
		}
	}
	haveNeigh := map[netip.Addr]string{}
	for _, n := range have.Neighbors {
		haveNeigh[n.IP] = n.MAC
	}
	wantNeigh := map[netip.Addr]bool{}
	for _, n := range want.Neighbors {
		wantNeigh[n.IP] = true
		if mac, ok := haveNeigh[n.IP]; !ok || mac != n.MAC {
			c.SetNeighbors = append(c.SetNeighbors, n)
		}
	}
	for _, n := range have.Neighbors {
		if !wantNeigh[n.IP] {
			c.DeleteNeighbors = append(c.DeleteNeighbors, n)
		}
	}
	haveFDB := map[FDB]bool{}
	for _, f := range have.FDB {
		haveFDB[f] = true
	}
	wantFDB := map[FDB]bool{}
	for _, f := range want.FDB {
		wantFDB[f] = true
		if !haveFDB[f] {
			c.AddFDB = append(c.AddFDB, f)
		}
	}
	for _, f := range have.FDB {
		if !wantFDB[f] {
			c.DeleteFDB = append(c.DeleteFDB, f)
		}
	}
	return c
}
