package app

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := func() Config {
		c := Config{RootDir: "/var/lib/minik8s/kubelet/n1", Port: 10250, Address: "0.0.0.0", ClusterCIDR: DefaultClusterCIDR, NetworkMode: "host-gw"}
		c.Node.Name = "n1"
		return c
	}
	for _, tt := range []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"usage off", func(c *Config) { c.UsagePeriod = -1 }, ""},
		{"usage every 30s", func(c *Config) { c.UsagePeriod = 30 * time.Second }, ""},
		{"usage too often", func(c *Config) { c.UsagePeriod = time.Millisecond }, "--node-usage-period 1ms"},
		{"usage too rarely", func(c *Config) { c.UsagePeriod = 5 * time.Minute }, "--node-usage-period 5m0s"},
		{"stream idle timeout", func(c *Config) { c.StreamIdleTimeout = time.Hour }, ""},
		{"negative stream idle timeout", func(c *Config) { c.StreamIdleTimeout = -time.Second }, "--streaming-connection-idle-timeout -1s"},
		{"no name", func(c *Config) { c.Node.Name = "" }, "no name"},
		{"relative root", func(c *Config) { c.RootDir = "kubelet" }, "--root-dir"},
		{"bad port", func(c *Config) { c.Port = 70000 }, "--port 70000"},
		{"bad address", func(c *Config) { c.Address = "here" }, "--address"},
		{"vxlan", func(c *Config) { c.NetworkMode = "vxlan" }, ""},
		{"unknown network mode", func(c *Config) { c.NetworkMode = "flannel" }, `--network-mode: network mode "flannel"`},
		{"no cluster CIDR", func(c *Config) { c.ClusterCIDR = "" }, "--cluster-cidr"},
		{"IPv6 cluster CIDR", func(c *Config) { c.ClusterCIDR = "fd00:10::/48" }, "--cluster-cidr"},
		{"cluster DNS", func(c *Config) { c.ClusterDNS, c.ClusterDomain = []string{"169.254.20.10"}, "cluster.local" }, ""},
		{"cluster DNS not an address", func(c *Config) { c.ClusterDNS = []string{"dns.local"} }, `--cluster-dns: "dns.local"`},
		{"four cluster DNS servers", func(c *Config) { c.ClusterDNS = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} }, "at most 3"},
		{"service CIDR", func(c *Config) { c.ServiceCIDR = "10.100.0.0/16" }, ""},
		{"bad service CIDR", func(c *Config) { c.ServiceCIDR = "10.100.0.0" }, `--service-cidr "10.100.0.0"`},
		{"IPv6 service CIDR", func(c *Config) { c.ServiceCIDR = "fd00:96::/112" }, "--service-cidr"},
		{"service CIDR with no room", func(c *Config) { c.ServiceCIDR = "10.96.0.0/32" }, "no address for the kubernetes Service"},
		{"bad cluster domain", func(c *Config) { c.ClusterDomain = "Cluster_Local" }, "--cluster-domain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
