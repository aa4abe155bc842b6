// Command apiserver serves the minik8s API: Kubernetes REST on etcd, with every change published
// to RabbitMQ.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"minik8s.io/apiserver/internal/app"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func defaultHome() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ".minik8s"
	}
	return h
}

func main() {
	var cfg app.Config
	var etcdServers, nodes, clusterCIDR string
	var logOpts logging.Options
	fs := flag.NewFlagSet("apiserver", flag.ExitOnError)
	fs.StringVar(&cfg.Home, "home", defaultHome(), "state directory (certificates, tokens, kubeconfigs, embedded etcd data); $MINIK8S_HOME")
	fs.StringVar(&cfg.BindAddress, "bind-address", "127.0.0.1", "address to serve HTTPS on")
	fs.IntVar(&cfg.SecurePort, "secure-port", 6443, "port to serve HTTPS on")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address clients reach this server at (default: the bind address, or 127.0.0.1)")
	fs.StringVar(&etcdServers, "etcd-servers", "", "comma-separated etcd endpoints; empty runs an embedded etcd")
	fs.StringVar(&cfg.EtcdClientURL, "embedded-etcd-client-url", "http://127.0.0.1:12379", "client URL of the embedded etcd (not 2379, so a system etcd can run beside it)")
	fs.StringVar(&cfg.EtcdPeerURL, "embedded-etcd-peer-url", "http://127.0.0.1:12380", "peer URL of the embedded etcd")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL the outbox publishes to")
	fs.DurationVar(&cfg.CompactInterval, "compact-interval", 5*time.Minute, "how often etcd history older than one interval is compacted (0 disables)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests may take at shutdown")
	fs.StringVar(&nodes, "nodes", "", "comma-separated node names to create identities and kubeconfigs for (kubeconfigs/node-<name>.kubeconfig)")
	fs.StringVar(&clusterCIDR, "cluster-cidr", "10.244.0.0/16", "the pod network; each node gets one block of it")
	fs.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", 24, "the prefix length of each node's block of --cluster-cidr")
	fs.StringVar(&cfg.ServerlessGatewayURL, "serverless-gateway-url", "", "the serverless gateway functions' and workflows' invoke is proxied to, e.g. http://127.0.0.1:8090 (empty: invoke answers 503)")
	fs.StringVar(&cfg.AuthorizationMode, "authorization-mode", app.AuthorizationNodeRBAC, "how requests are authorized: Node,RBAC (system:masters, the Node authorizer, then RBAC) or AlwaysAllow (every authenticated request)")
	fs.StringVar(&cfg.AuditPolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy saying what is recorded (with --audit-log-path)")
	fs.StringVar(&cfg.AuditLog.Path, "audit-log-path", "", "the audit log, JSON lines, '-' for standard output (empty: no audit log)")
	fs.IntVar(&cfg.AuditLog.MaxSizeMB, "audit-log-maxsize", 100, "megabytes the audit log reaches before it is rotated")
	fs.IntVar(&cfg.AuditLog.MaxBackups, "audit-log-maxbackup", 10, "rotated audit logs kept (0: all)")
	fs.IntVar(&cfg.AuditLog.MaxAgeDays, "audit-log-maxage", 0, "days a rotated audit log is kept (0: no limit)")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	p, err := netip.ParsePrefix(clusterCIDR)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: --cluster-cidr: %v\n", err)
		os.Exit(2)
	}
	cfg.ClusterCIDR = p.Masked()
	if nodes != "" {
		cfg.Nodes = strings.Split(nodes, ",")
	}
	if etcdServers != "" {
		cfg.EtcdServers = strings.Split(etcdServers, ",")
	}
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("apiserver", os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("apiserver failed", "err", err)
		os.Exit(1)
	}
}
