// Command kubeproxy runs on every node: it programs iptables so that Services' ClusterIPs and
// NodePorts reach their ready endpoints, serves the cluster's DNS at a node-local address,
// and keeps the Ingress hosts in the node's hosts file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"minik8s.io/kubeproxy/internal/app"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func defaultKubeconfig() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "kubeconfigs", "kubeproxy.kubeconfig")
}

func main() {
	var cfg app.Config
	var logOpts logging.Options
	var nodePortAddresses string
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("kubeproxy", flag.ExitOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", defaultKubeconfig(), "kubeconfig ($MINIK8S_HOME/kubeconfigs/kubeproxy.kubeconfig, written by the apiserver)")
	fs.StringVar(&cfg.Node, "node", strings.ToLower(host), "this node's name; the bus queue is kubeproxy.<node>")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "the pods' addresses; connections to a ClusterIP from outside it are masqueraded")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.96.0.0/12", "the ClusterIP range")
	fs.StringVar(&cfg.NodeIP, "node-ip", "", "this node's primary address (default: the source of the default route); what --nodeport-addresses=primary means")
	fs.StringVar(&nodePortAddresses, "nodeport-addresses", "", "comma-separated CIDRs (or 'primary') NodePorts answer on; empty: every local address but loopback")
	fs.StringVar(&cfg.Balance, "balance", "random", "how a Service spreads connections over its endpoints: random or roundrobin")
	fs.StringVar(&cfg.DNSAddress, "dns-address", "169.254.20.10", "node-local address of the cluster DNS (UDP and TCP port 53); put on a dummy link if no link has it")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	fs.StringVar(&cfg.UpstreamResolvConf, "upstream-resolv-conf", "/etc/resolv.conf", "resolv.conf whose nameservers get every name outside the cluster")
	fs.StringVar(&cfg.HostsFile, "hosts-file", "/etc/hosts", "hosts file that gets the Ingress hosts block; empty: none")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", 30*time.Second, "how often Services, EndpointSlices and Ingresses are relisted from the API (the bus is a hint)")
	fs.DurationVar(&cfg.SyncPeriod, "sync-period", 30*time.Second, "how often the rules are synced and checked even without changes")
	fs.DurationVar(&cfg.MinSyncPeriod, "min-sync-period", 500*time.Millisecond, "least time between two syncs while changes keep coming (an idle kubeproxy syncs at once)")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "127.0.0.1:10249", "host:port of /metrics and /healthz; empty: off")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long kubeproxy may take to stop (its rules stay)")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if nodePortAddresses != "" {
		cfg.NodePortAddresses = strings.Split(nodePortAddresses, ",")
	}
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeproxy: %v\n", err)
		os.Exit(2)
	}
	if _, err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeproxy: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("kubeproxy", os.Stderr).With("node", cfg.Node)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("kubeproxy failed", "err", err)
		os.Exit(1)
	}
}
