package fake

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"minik8s.io/kubelet/internal/network/nodenet"
)

// Kernel is nodenet.Kernel in memory. It holds only what the reconciler owns (routes marked
// nodenet.RouteProtocol, one VXLAN device and its entries) and the addresses of the node's
// interfaces, which decide, as in the kernel, which gateways are reachable and which local
// address a VXLAN device can use. Every change is recorded.
type Kernel struct {
	mu      sync.Mutex
	addrs   []netip.Prefix
	routes  map[netip.Prefix]nodenet.Route
	vtep    *nodenet.VTEP
	neigh   map[netip.Addr]string
	fdb     map[string]netip.Addr // by MAC: the kernel keeps one destination per MAC
	changes []string
}

var _ nodenet.Kernel = (*Kernel)(nil)

// NewKernel returns a kernel whose interfaces hold addrs (address and subnet, such as
// 192.168.5.1/24) and that has nothing of ours yet.
func NewKernel(addrs ...netip.Prefix) *Kernel {
	return &Kernel{addrs: slices.Clone(addrs), routes: map[netip.Prefix]nodenet.Route{},
		neigh: map[netip.Addr]string{}, fdb: map[string]netip.Addr{}}
}

// State is what the kernel holds, sorted as nodenet.Desired sorts a Plan.
func (k *Kernel) State() nodenet.Plan {
	k.mu.Lock()
	defer k.mu.Unlock()
	var p nodenet.Plan
	for _, r := range k.routes {
		p.Routes = append(p.Routes, r)
	}
	if k.vtep != nil {
		v := *k.vtep
		p.VTEP = &v
	}
	for ip, mac := range k.neigh {
		p.Neighbors = append(p.Neighbors, nodenet.Neighbor{IP: ip, MAC: mac})
	}
	for mac, dst := range k.fdb {
		p.FDB = append(p.FDB, nodenet.FDB{MAC: mac, Dst: dst})
	}
	p.Sort()
	return p
}

// Changes returns the changes made so far and forgets them.
func (k *Kernel) Changes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.changes
	k.changes = nil
	return c
}

// AddForeignRoute stores a route as if someone else (a manual `ip route ... proto 107`, an
// earlier run) had made it, unchecked and unrecorded.
func (k *Kernel) AddForeignRoute(r nodenet.Route) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.routes[r.Dst] = r
}

func (k *Kernel) record(format string, args ...any) {
	k.changes = append(k.changes, fmt.Sprintf(format, args...))
}

func (k *Kernel) Routes() ([]nodenet.Route, error) {
	return k.State().Routes, nil
}

// onLink reports whether gw is inside the subnet of one of the node's addresses: the kernel
// refuses a gateway it has no connected route to.
func (k *Kernel) onLink(gw netip.Addr) bool {
	return slices.ContainsFunc(k.addrs, func(p netip.Prefix) bool { return p.Masked().Contains(gw) })
}

func (k *Kernel) ReplaceRoute(r nodenet.Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.Dev != "" {
		if err := k.device(r.Dev); err != nil {
			return fmt.Errorf("route %s: device: %w", r, err)
		}
	}
	if !r.Onlink && !k.onLink(r.Gw) {
		return fmt.Errorf("route %s: network is unreachable", r)
	}
	if old, ok := k.routes[r.Dst]; ok && old == r {
		return nil
	}
	k.routes[r.Dst] = r
	k.record("replace route %s", r)
	return nil
}

func (k *Kernel) DeleteRoute(r nodenet.Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.routes[r.Dst]; ok {
		delete(k.routes, r.Dst)
		k.record("delete route %s", r)
	}
	return nil
}

func (k *Kernel) EnsureVTEP(v nodenet.VTEP) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !slices.ContainsFunc(k.addrs, func(p netip.Prefix) bool { return p.Addr() == v.Local }) {
		return fmt.Errorf("vxlan %s: no interface has the node address %s", v.Name, v.Local)
	}
	if k.vtep != nil && *k.vtep == v {
		return nil
	}
	// One device: another name replaces it, as do the settings a live device cannot change.
	if k.vtep != nil && (k.vtep.Name != v.Name || k.vtep.VNI != v.VNI || k.vtep.Port != v.Port || k.vtep.Local != v.Local) {
		k.dropVTEPLocked()
	}
	if old := k.vtep; old != nil {
		// The kernel flushes the neighbours of a device whose MAC or address changes, and
		// the routes through it when its old address goes.
		if old.MAC != v.MAC || old.Address != v.Address {
			k.neigh = map[netip.Addr]string{}
		}
		if old.Address != v.Address {
			k.dropRoutesLocked(old.Name)
		}
	}
	k.vtep = &v
	k.record("vtep %s vni %d port %d local %s mac %s address %s", v.Name, v.VNI, v.Port, v.Local, v.MAC, v.Address)
	return nil
}

// dropVTEPLocked deletes the device; its entries and the routes through it go with it.
func (k *Kernel) dropVTEPLocked() {
	name := k.vtep.Name
	k.vtep = nil
	k.neigh, k.fdb = map[netip.Addr]string{}, map[string]netip.Addr{}
	k.dropRoutesLocked(name)
	k.record("delete vtep %s", name)
}

func (k *Kernel) dropRoutesLocked(dev string) {
	for dst, r := range k.routes {
		if r.Dev == dev {
			delete(k.routes, dst)
		}
	}
}

func (k *Kernel) DeleteVTEP(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.vtep != nil && k.vtep.Name == name {
		k.dropVTEPLocked()
	}
	return nil
}

func (k *Kernel) VTEPEntries(dev string) ([]nodenet.Neighbor, []nodenet.FDB, error) {
	s := k.State()
	if s.VTEP == nil || s.VTEP.Name != dev {
		return nil, nil, nil
	}
	return s.Neighbors, s.FDB, nil
}

func (k *Kernel) device(dev string) error {
	if k.vtep == nil || k.vtep.Name != dev {
		return fmt.Errorf("no device %s: link not found", dev)
	}
	return nil
}

func (k *Kernel) SetNeighbor(dev string, n nodenet.Neighbor) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.device(dev); err != nil {
		return fmt.Errorf("neighbour %s %s on %s: %w", n.IP, n.MAC, dev, err)
	}
	k.neigh[n.IP] = n.MAC
	k.record("neighbour %s %s", n.IP, n.MAC)
	return nil
}

func (k *Kernel) DeleteNeighbor(dev string, n nodenet.Neighbor) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.device(dev) != nil {
		return nil
	}
	if _, ok := k.neigh[n.IP]; ok {
		delete(k.neigh, n.IP)
		k.record("delete neighbour %s", n.IP)
	}
	return nil
}

func (k *Kernel) SetFDB(dev string, f nodenet.FDB) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.device(dev); err != nil {
		return fmt.Errorf("fdb %s dst %s on %s: %w", f.MAC, f.Dst, dev, err)
	}
	k.fdb[f.MAC] = f.Dst
	k.record("fdb %s dst %s", f.MAC, f.Dst)
	return nil
}

// DeleteFDB removes the entry only when it sends the MAC to f.Dst, as the kernel does.
func (k *Kernel) DeleteFDB(dev string, f nodenet.FDB) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.device(dev) != nil {
		return nil
	}
	if dst, ok := k.fdb[f.MAC]; ok && dst == f.Dst {
		delete(k.fdb, f.MAC)
		k.record("delete fdb %s dst %s", f.MAC, f.Dst)
	}
	return nil
}
