package app

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubeproxy/internal/rules"
)

func validConfig() Config {
	return Config{Kubeconfig: "k", Node: "n1", ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12",
		NodeIP: "192.168.56.11", Balance: "random", DNSAddress: "169.254.20.10", ClusterDomain: "Cluster.Local.",
		RelistPeriod: time.Second, SyncPeriod: time.Second}
}

func TestValidate(t *testing.T) {
	c := validConfig()
	c.NodePortAddresses = []string{"primary", "10.0.0.0/8"}
	c.Balance = "roundrobin"
	s, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	want := rules.Options{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), Balance: rules.RoundRobin,
		NodePortAddresses: []netip.Prefix{netip.MustParsePrefix("192.168.56.11/32"), netip.MustParsePrefix("10.0.0.0/8")}}
	if diff := cmp.Diff(want, s.rules, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("rules options (-want +got):\n%s", diff)
	}
	if c.Queue != "kubeproxy.n1" || c.ClusterDomain != "cluster.local" || c.DNSPort != 53 {
		t.Errorf("defaults: queue %q, domain %q, port %d", c.Queue, c.ClusterDomain, c.DNSPort)
	}

	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Node = "" }, "--node"},
		{func(c *Config) { c.ClusterCIDR = "10.244.0.0" }, "--cluster-cidr"},
		{func(c *Config) { c.ServiceCIDR = "fd00::/108" }, "--service-cidr"},
		{func(c *Config) { c.Balance = "leastconn" }, "--balance"},
		{func(c *Config) { c.DNSAddress = "dns" }, "--dns-address"},
		{func(c *Config) { c.NodeIP = "::1" }, "--node-ip"},
		{func(c *Config) { c.NodePortAddresses = []string{"nope"} }, "--nodeport-addresses"},
		{func(c *Config) { c.SyncPeriod = 0 }, "--sync-period"},
		{func(c *Config) { c.MetricsAddress = "10249" }, "--metrics-address"},
	} {
		c := validConfig()
		tc.change(&c)
		if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error naming %s", err, tc.want)
		}
	}
}
