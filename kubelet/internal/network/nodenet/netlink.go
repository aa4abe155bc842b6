package nodenet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Netlink is Kernel over rtnetlink (github.com/vishvananda/netlink).
type Netlink struct {
	h *netlink.Handle
}

var _ Kernel = (*Netlink)(nil)

// NewNetlink opens a netlink handle in the network namespace at nsPath, or in the caller's
// own one when nsPath is empty. The handle keeps its namespace whichever thread uses it.
func NewNetlink(nsPath string) (*Netlink, error) {
	if nsPath == "" {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("netlink: %w", err)
		}
		return &Netlink{h: h}, nil
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("netlink: open %s: %w", nsPath, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", nsPath, err)
	}
	return &Netlink{h: h}, nil
}

// Close releases the handle's sockets.
func (k *Netlink) Close() { k.h.Close() }

func (k *Netlink) Routes() ([]Route, error) {
	rs, err := k.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: RouteProtocol},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	names := map[int]string{}
	out := make([]Route, 0, len(rs))
	for _, r := range rs {
		if r.Dst == nil {
			continue
		}
		dst, ok := prefixOf(r.Dst)
		if !ok {
			continue
		}
		route := Route{Dst: dst, Onlink: r.Flags&int(netlink.FLAG_ONLINK) != 0}
		if gw, ok := netip.AddrFromSlice(r.Gw.To4()); ok {
			route.Gw = gw
		}
		// Host-gw routes name no device (the kernel picks the one to the gateway), so only a
		// route through the VXLAN device, which is on-link, reports one.
		if route.Onlink && r.LinkIndex > 0 {
			name, ok := names[r.LinkIndex]
			if !ok {
				if l, err := k.h.LinkByIndex(r.LinkIndex); err == nil {
					name = l.Attrs().Name
				}
				names[r.LinkIndex] = name
			}
			route.Dev = name
		}
		out = append(out, route)
	}
	return out, nil
}

func (k *Netlink) route(r Route) (*netlink.Route, error) {
	nr := &netlink.Route{
		Dst:      prefixNet(r.Dst),
		Gw:       net.IP(r.Gw.AsSlice()),
		Protocol: RouteProtocol,
		Table:    unix.RT_TABLE_MAIN,
		Scope:    netlink.SCOPE_UNIVERSE,
	}
	if r.Dev != "" {
		l, err := k.h.LinkByName(r.Dev)
		if err != nil {
			return nil, fmt.Errorf("route %s: device: %w", r, err)
		}
		nr.LinkIndex = l.Attrs().Index
	}
	if r.Onlink {
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	return nr, nil
}

func (k *Netlink) ReplaceRoute(r Route) error {
	nr, err := k.route(r)
	if err != nil {
		return err
	}
	if err := k.h.RouteReplace(nr); err != nil {
		return fmt.Errorf("route %s: %w", r, err)
	}
	return nil
}

func (k *Netlink) DeleteRoute(r Route) error {
	nr := &netlink.Route{Dst: prefixNet(r.Dst), Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	if err := k.h.RouteDel(nr); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("delete route %s: %w", r, err)
	}
	return nil
}

func (k *Netlink) EnsureVTEP(v VTEP) error {
	parent, mtu, err := k.linkWithAddr(v.Local)
	if err != nil {
		return fmt.Errorf("vxlan %s: %w", v.Name, err)
	}
	mac, err := net.ParseMAC(v.MAC)
	if err != nil {
		return fmt.Errorf("vxlan %s: %w", v.Name, err)
	}
	want := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: v.Name, MTU: mtu - VXLANOverhead, HardwareAddr: mac},
		VxlanId:      v.VNI,
		VtepDevIndex: parent,
		SrcAddr:      net.IP(v.Local.AsSlice()),
		Port:         v.Port,
		Learning:     false,
	}
	l, err := k.h.LinkByName(v.Name)
	switch {
	case err == nil:
		if vx, ok := l.(*netlink.Vxlan); !ok || vx.VxlanId != v.VNI || vx.Port != v.Port || vx.VtepDevIndex != parent ||
			!vx.SrcAddr.Equal(want.SrcAddr) || vx.Learning {
			// Those cannot change on a live device: make it again.
			if err := k.h.LinkDel(l); err != nil {
				return fmt.Errorf("vxlan %s: replace: %w", v.Name, err)
			}
			l = nil
		}
	case !isNotFound(err):
		return fmt.Errorf("vxlan %s: %w", v.Name, err)
	default:
		l = nil
	}
	if l == nil {
		if err := k.h.LinkAdd(want); err != nil {
			return fmt.Errorf("vxlan %s: create: %w", v.Name, err)
		}
		if l, err = k.h.LinkByName(v.Name); err != nil {
			return fmt.Errorf("vxlan %s: %w", v.Name, err)
		}
	}
	if l.Attrs().HardwareAddr.String() != mac.String() {
		if err := k.h.LinkSetHardwareAddr(l, mac); err != nil {
			return fmt.Errorf("vxlan %s: set MAC: %w", v.Name, err)
		}
	}
	if l.Attrs().MTU != want.MTU {
		if err := k.h.LinkSetMTU(l, want.MTU); err != nil {
			return fmt.Errorf("vxlan %s: set MTU: %w", v.Name, err)
		}
	}
	if err := k.ensureOnlyAddr(l, v.Address); err != nil {
		return fmt.Errorf("vxlan %s: %w", v.Name, err)
	}
	if err := k.h.LinkSetUp(l); err != nil {
		return fmt.Errorf("vxlan %s: up: %w", v.Name, err)
	}
	return nil
}

// ensureOnlyAddr leaves addr/32 as the link's only IPv4 address (none when addr is invalid).
func (k *Netlink) ensureOnlyAddr(l netlink.Link, addr netip.Addr) error {
	addrs, err := k.h.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	have := false
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP.To4())
		if ones, _ := a.Mask.Size(); addr.IsValid() && ip == addr && ones == 32 {
			have = true
			continue
		}
		if err := k.h.AddrDel(l, &a); err != nil {
			return fmt.Errorf("remove address %s: %w", a.IPNet, err)
		}
	}
	if !have && addr.IsValid() {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(32, 32)}}
		if err := k.h.AddrAdd(l, a); err != nil {
			return fmt.Errorf("add address %s: %w", addr, err)
		}
	}
	return nil
}

// linkWithAddr finds the interface holding ip and returns its index and MTU.
func (k *Netlink) linkWithAddr(ip netip.Addr) (int, int, error) {
	addrs, err := k.h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return 0, 0, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP.To4()); ok && got == ip {
			l, err := k.h.LinkByIndex(a.LinkIndex)
			if err != nil {
				return 0, 0, err
			}
			return l.Attrs().Index, l.Attrs().MTU, nil
		}
	}
	return 0, 0, fmt.Errorf("no interface has the node address %s", ip)
}

// ParentMTU is the MTU of the interface that holds ip: the VXLAN device and the pods get this
// less VXLANOverhead.
func (k *Netlink) ParentMTU(ip netip.Addr) (int, error) {
	_, mtu, err := k.linkWithAddr(ip)
	return mtu, err
}

func (k *Netlink) DeleteVTEP(name string) error {
	l, err := k.h.LinkByName(name)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("vxlan %s: %w", name, err)
	}
	if _, ok := l.(*netlink.Vxlan); !ok {
		return fmt.Errorf("%s is a %s device, not ours to delete", name, l.Type())
	}
	if err := k.h.LinkDel(l); err != nil {
		return fmt.Errorf("delete vxlan %s: %w", name, err)
	}
	return nil
}

func (k *Netlink) VTEPEntries(dev string) ([]Neighbor, []FDB, error) {
	l, err := k.h.LinkByName(dev)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("vxlan %s: %w", dev, err)
	}
	idx := l.Attrs().Index
	ns, err := k.h.NeighList(idx, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, fmt.Errorf("vxlan %s: neighbours: %w", dev, err)
	}
	var neigh []Neighbor
	for _, n := range ns {
		ip, ok := netip.AddrFromSlice(n.IP.To4())
		if !ok || n.State&netlink.NUD_PERMANENT == 0 || n.HardwareAddr == nil {
			continue
		}
		neigh = append(neigh, Neighbor{IP: ip, MAC: n.HardwareAddr.String()})
	}
	fs, err := k.h.NeighList(idx, unix.AF_BRIDGE)
	if err != nil {
		return nil, nil, fmt.Errorf("vxlan %s: forwarding entries: %w", dev, err)
	}
	var fdb []FDB
	for _, f := range fs {
		ip, ok := netip.AddrFromSlice(f.IP.To4())
		if !ok || f.HardwareAddr == nil || f.State&netlink.NUD_PERMANENT == 0 {
			continue
		}
		fdb = append(fdb, FDB{MAC: f.HardwareAddr.String(), Dst: ip})
	}
	return neigh, fdb, nil
}

func (k *Netlink) linkIndex(dev string) (int, error) {
	l, err := k.h.LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("vxlan %s: %w", dev, err)
	}
	return l.Attrs().Index, nil
}

func (k *Netlink) neigh(dev string, ip netip.Addr, mac string, family int) (*netlink.Neigh, error) {
	idx, err := k.linkIndex(dev)
	if err != nil {
		return nil, err
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return nil, err
	}
	n := &netlink.Neigh{LinkIndex: idx, Family: family, State: netlink.NUD_PERMANENT, IP: net.IP(ip.AsSlice()), HardwareAddr: hw}
	if family == unix.AF_BRIDGE {
		n.Flags = netlink.NTF_SELF
	} else {
		n.Type = unix.RTN_UNICAST
	}
	return n, nil
}

func (k *Netlink) SetNeighbor(dev string, n Neighbor) error {
	nn, err := k.neigh(dev, n.IP, n.MAC, netlink.FAMILY_V4)
	if err == nil {
		err = k.h.NeighSet(nn)
	}
	if err != nil {
		return fmt.Errorf("neighbour %s %s on %s: %w", n.IP, n.MAC, dev, err)
	}
	return nil
}

func (k *Netlink) DeleteNeighbor(dev string, n Neighbor) error {
	nn, err := k.neigh(dev, n.IP, n.MAC, netlink.FAMILY_V4)
	if err == nil {
		err = k.h.NeighDel(nn)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete neighbour %s on %s: %w", n.IP, dev, err)
	}
	return nil
}

func (k *Netlink) SetFDB(dev string, f FDB) error {
	nn, err := k.neigh(dev, f.Dst, f.MAC, unix.AF_BRIDGE)
	if err == nil {
		err = k.h.NeighSet(nn)
	}
	if err != nil {
		return fmt.Errorf("fdb %s dst %s on %s: %w", f.MAC, f.Dst, dev, err)
	}
	return nil
}

func (k *Netlink) DeleteFDB(dev string, f FDB) error {
	nn, err := k.neigh(dev, f.Dst, f.MAC, unix.AF_BRIDGE)
	if err == nil {
		err = k.h.NeighDel(nn)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete fdb %s dst %s on %s: %w", f.MAC, f.Dst, dev, err)
	}
	return nil
}

func isNotFound(err error) bool {
	var lnf netlink.LinkNotFoundError
	return errors.As(err, &lnf) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ESRCH)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(n.IP.To4())
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits != 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(ip, ones), true
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), 32)}
}
