package localaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultLink is the dummy link kubeproxy makes for the DNS address.
const DefaultLink = "minik8s-dns"

// Ensure makes addr local: if no link has it and the kernel does not take it as local already
// (127.0.0.0/8), it is added as addr/32 to the dummy link named link (created and brought up if
// missing), or to lo when dummy links are not supported. It returns the link that holds the
// address ("local" for one that is local without being on a link). Idempotent; nothing is
// removed on exit, so a restarting kubeproxy finds it in place.
func Ensure(addr netip.Addr, link string) (string, error) {
	if holder, err := holderOf(addr); err != nil || holder != "" {
		return holder, err
	}
	// Binding succeeds exactly for addresses the kernel delivers locally.
	if c, err := net.ListenPacket("udp4", netip.AddrPortFrom(addr, 0).String()); err == nil {
		c.Close()
		return "local", nil
	}
	l, err := dummy(link)
	if err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOTSUP) {
			return "", err
		}
		if l, err = netlink.LinkByName("lo"); err != nil {
			return "", fmt.Errorf("no dummy links here and no lo: %w", err)
		}
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return "", fmt.Errorf("add %s to %s: %w", addr, l.Attrs().Name, err)
	}
	return l.Attrs().Name, nil
}

// holderOf returns the name of the link that has addr, "" when none.
func holderOf(addr netip.Addr) (string, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			l, err := netlink.LinkByIndex(a.LinkIndex)
			if err != nil {
				return "", fmt.Errorf("link of %s: %w", addr, err)
			}
			return l.Attrs().Name, nil
		}
	}
	return "", nil
}

// dummy returns the dummy link name, created and up.
func dummy(name string) (netlink.Link, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if !errors.As(err, &notFound) {
			return nil, fmt.Errorf("find link %s: %w", name, err)
		}
		if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("add dummy link %s: %w", name, err)
		}
		if l, err = netlink.LinkByName(name); err != nil {
			return nil, fmt.Errorf("find link %s: %w", name, err)
		}
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return nil, fmt.Errorf("set %s up: %w", name, err)
	}
	return l, nil
}
