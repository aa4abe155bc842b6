package app

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/rules"
	"minik8s.io/shared/bus"
)

// Config is kubeproxy's configuration, from flags.
type Config struct {
	Kubeconfig string
	// Node names this node; the bus queue is kubeproxy.<node>.
	Node    string
	AMQPURL string
	// Queue defaults to bus.KubeproxyQueue(Node).
	Queue string

	ClusterCIDR string
	ServiceCIDR string
	// NodeIP is the node's primary address (--node-ip); "primary" in NodePortAddresses
	// means it. Empty: the source address of the default route.
	NodeIP string
	// NodePortAddresses restricts NodePorts: CIDRs, or "primary"; empty means every local
	// address but loopback.
	NodePortAddresses []string
	Balance           string

	DNSAddress         string
	DNSPort            int
	ClusterDomain      string
	UpstreamResolvConf string
	// HostsFile is where the Ingress hosts block goes; empty leaves every hosts file alone.
	HostsFile string

	RelistPeriod  time.Duration
	SyncPeriod    time.Duration
	MinSyncPeriod time.Duration

	MetricsAddress  string
	ShutdownTimeout time.Duration

	// Tables replaces the iptables adapter (tests).
	Tables netfilter.Interface
}

// settings are the parsed forms of Config's strings.
type settings struct {
	rules      rules.Options
	serviceNet netip.Prefix
	nodeIP     netip.Addr
	dnsAddr    netip.Addr
}

// Validate checks the configuration, fills defaults and parses addresses.
func (c *Config) Validate() (settings, error) {
	var s settings
	if c.Kubeconfig == "" {
		return s, errors.New("--kubeconfig is required")
	}
	if c.Node == "" {
		return s, errors.New("--node is required")
	}
	if c.Queue == "" {
		c.Queue = bus.KubeproxyQueue(c.Node)
	}
	var err error
	if s.rules.ClusterCIDR, err = prefix4("--cluster-cidr", c.ClusterCIDR); err != nil {
		return s, err
	}
	if s.serviceNet, err = prefix4("--service-cidr", c.ServiceCIDR); err != nil {
		return s, err
	}
	if s.rules.Balance, err = rules.ParseBalance(c.Balance); err != nil {
		return s, fmt.Errorf("--balance: %w", err)
	}
	if c.NodeIP != "" {
		if s.nodeIP, err = netip.ParseAddr(c.NodeIP); err != nil || !s.nodeIP.Is4() {
			return s, fmt.Errorf("--node-ip %q: want an IPv4 address", c.NodeIP)
		}
	} else {
		s.nodeIP = defaultRouteSource()
	}
	for _, a := range c.NodePortAddresses {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case a == "primary":
			if !s.nodeIP.IsValid() {
				return s, errors.New(`--nodeport-addresses primary: no --node-ip, and no default route to take it from`)
			}
			s.rules.NodePortAddresses = append(s.rules.NodePortAddresses, netip.PrefixFrom(s.nodeIP, 32))
		default:
			p, err := prefix4("--nodeport-addresses", a)
			if err != nil {
				return s, err
			}
			s.rules.NodePortAddresses = append(s.rules.NodePortAddresses, p)
		}
	}
	if s.dnsAddr, err = netip.ParseAddr(c.DNSAddress); err != nil || !s.dnsAddr.Is4() {
		return s, fmt.Errorf("--dns-address %q: want an IPv4 address", c.DNSAddress)
	}
	if c.DNSPort <= 0 || c.DNSPort > 65535 {
		c.DNSPort = 53
	}
	if c.ClusterDomain == "" {
		return s, errors.New("--cluster-domain is empty")
	}
	c.ClusterDomain = strings.TrimSuffix(strings.ToLower(c.ClusterDomain), ".")
	for name, d := range map[string]*time.Duration{"--relist-period": &c.RelistPeriod, "--sync-period": &c.SyncPeriod} {
		if *d <= 0 {
			return s, fmt.Errorf("%s must be positive, got %s", name, *d)
		}
	}
	if c.MinSyncPeriod < 0 {
		return s, fmt.Errorf("--min-sync-period must not be negative, got %s", c.MinSyncPeriod)
	}
	if c.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddress); err != nil {
			return s, fmt.Errorf("--metrics-address %q: %w", c.MetricsAddress, err)
		}
	}
	return s, nil
}

func prefix4(flag, v string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(v))
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s %q: want an IPv4 CIDR such as 10.244.0.0/16", flag, v)
	}
	return p.Masked(), nil
}

// defaultRouteSource is the address the node uses to reach the world; invalid when there is
// no default route. Dialing UDP sends nothing: it only picks a route and a source.
func defaultRouteSource() netip.Addr {
	c, err := net.Dial("udp4", "192.0.2.1:9")
	if err != nil {
		return netip.Addr{}
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP.To4())
		return ip
	}
	return netip.Addr{}
}
