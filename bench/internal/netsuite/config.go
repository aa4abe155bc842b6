package netsuite

import "time"

// Config sizes a run. Zero fields take the values of Defaults.
type Config struct {
	// Kubeconfig reaches make up's apiserver; empty is the default path
	// ($KUBECONFIG, $MINIK8S_HOME/kubeconfig, ~/.minik8s/kubeconfig).
	Kubeconfig string
	// Node is where both pods run: it must be this machine's node, since the host is one of
	// the vantage points. Empty picks the cluster's only Node.
	Node string
	// Samples is the number of measured connections per target, and of DNS queries per
	// target; Warmup of each go before them unmeasured (negative: none).
	Samples int
	Warmup  int
	// Transfers is the number of measured large GETs per target.
	Transfers int
	// SmallBytes and LargeBytes are the sizes of the latency test's file and of the
	// throughput test's (the fileserver takes at most 64 MiB in one PUT).
	SmallBytes, LargeBytes int64
	FileserverImage        string
	ClientImage            string
	// KubeproxyHealthz is the node's kubeproxy's health URL (its --metrics-address).
	KubeproxyHealthz string
	// ClusterDNS is kubeproxy's --dns-address, ClusterDomain its --cluster-domain.
	ClusterDNS    string
	ClusterDomain string
	// ResolvConf names the node's upstream resolver (its first nameserver), AptSources the
	// files and directories whose first http(s) source host is the outside name asked.
	ResolvConf string
	AptSources []string
	// ReadyTimeout bounds each wait for the cluster: pods Running, the ClusterIP answering,
	// the cluster DNS knowing the Service.
	ReadyTimeout time.Duration
	// OpTimeout bounds one connection or transfer, DNSTimeout one query: a lost UDP query
	// costs it, and the upstream of a shared machine loses a few.
	OpTimeout  time.Duration
	DNSTimeout time.Duration
}

// Defaults are the sizes of issue 11's network figures.
var Defaults = Config{
	Samples:          2000,
	Warmup:           50,
	Transfers:        10,
	SmallBytes:       1 << 10,
	LargeBytes:       64 << 20,
	FileserverImage:  "minik8s/fileserver:1.0",
	ClientImage:      "minik8s/busybox:1.0",
	KubeproxyHealthz: "http://127.0.0.1:10249/healthz",
	ClusterDNS:       "169.254.20.10",
	ClusterDomain:    "cluster.local",
	ResolvConf:       "/etc/resolv.conf",
	AptSources:       []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d"},
	ReadyTimeout:     3 * time.Minute,
	OpTimeout:        30 * time.Second,
	// Longer than kubeproxy's 2 s per upstream, so that a query it forwards and loses comes
	// back as its SERVFAIL rather than as our timeout.
	DNSTimeout: 3 * time.Second,
}

func (c *Config) fill() {
	d := Defaults
	if c.Samples <= 0 {
		c.Samples = d.Samples
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = d.Warmup
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Transfers <= 0 {
		c.Transfers = d.Transfers
	}
	if c.SmallBytes <= 0 {
		c.SmallBytes = d.SmallBytes
	}
	if c.LargeBytes <= 0 {
		c.LargeBytes = d.LargeBytes
	}
	if c.FileserverImage == "" {
		c.FileserverImage = d.FileserverImage
	}
	if c.ClientImage == "" {
		c.ClientImage = d.ClientImage
	}
	if c.KubeproxyHealthz == "" {
		c.KubeproxyHealthz = d.KubeproxyHealthz
	}
	if c.ClusterDNS == "" {
		c.ClusterDNS = d.ClusterDNS
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = d.ClusterDomain
	}
	if c.ResolvConf == "" {
		c.ResolvConf = d.ResolvConf
	}
	if len(c.AptSources) == 0 {
		c.AptSources = d.AptSources
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = d.ReadyTimeout
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = d.OpTimeout
	}
	if c.DNSTimeout <= 0 {
		c.DNSTimeout = d.DNSTimeout
	}
}
