// Command kubelet is the minik8s node agent: it registers its Node, runs the pods bound to it on
// Docker with CNI networking, and reports their status.
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

	"minik8s.io/kubelet/internal/app"
	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/kubelet/internal/pods/dns"
	"minik8s.io/kubelet/internal/streaming"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func home() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ".minik8s"
	}
	return h
}

func main() {
	var cfg app.Config
	var nodeConfig, nodeName, internalIP, cniDirs, clusterDNS string
	var logOpts logging.Options
	fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
	fs.StringVar(&nodeConfig, "node-config", "", "node config file (YAML: name, labels, roles, taints, addresses)")
	fs.StringVar(&nodeName, "node-name", "", "node name (overrides the node config; default: the host name)")
	fs.StringVar(&internalIP, "node-ip", "", "the node's InternalIP (default: the address of the default route's interface)")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig (default: $MINIK8S_HOME/kubeconfigs/node-<name>.kubeconfig)")
	fs.StringVar(&cfg.RootDir, "root-dir", "", "state directory (default: /var/lib/minik8s/kubelet/<name>)")
	fs.StringVar(&cfg.DockerHost, "docker-host", "", "Docker endpoint (default: $DOCKER_HOST or the local socket)")
	fs.StringVar(&cfg.RedisAddr, "redis-addr", "127.0.0.1:6379", "Redis for the cache of desired pods")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	fs.StringVar(&cfg.Address, "address", "0.0.0.0", "address to serve HTTPS on")
	fs.IntVar(&cfg.Port, "port", 10250, "port to serve HTTPS on (logs, stats)")
	fs.StringVar(&cfg.SandboxImage, "pod-infra-container-image", "minik8s/pause:1.0", "the pause image of pod sandboxes")
	fs.StringVar(&cniDirs, "cni-bin-dir", "/usr/lib/cni,/opt/cni/bin", "comma-separated directories of CNI plugins")
	fs.StringVar(&cfg.BridgeName, "cni-bridge", "minik8s0", "the pod bridge on this node")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", app.DefaultClusterCIDR, "the whole pod network (the apiserver's --cluster-cidr): pod traffic leaving it is masqueraded, traffic to and from it is accepted in FORWARD")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", app.DefaultServiceCIDR, "the Service range (the apiserver's): its first address is the kubernetes Service's, whose KUBERNETES_SERVICE_* variables every container gets")
	fs.StringVar(&cfg.NetworkMode, "network-mode", "host-gw", "how pods reach other nodes' pods: host-gw (a route to each node's pod CIDR via its InternalIP; nodes on one L2 segment) or vxlan (a VXLAN device, VNI 1, UDP 8472)")
	fs.StringVar(&clusterDNS, "cluster-dns", "", "comma-separated cluster DNS server addresses that ClusterFirst pods resolve with (e.g. 169.254.20.10, where kubeproxy serves DNS); empty keeps pods on the node's resolver")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", dns.DefaultClusterDomain, "the cluster's DNS domain: ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain>")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver configuration, the base of pods with dnsPolicy Default and of ClusterFirst pods' search path")
	fs.DurationVar(&cfg.PLEGPeriod, "pleg-period", time.Second, "how often containers are relisted from Docker")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", 30*time.Second, "how often the node's pods are relisted from the API")
	fs.DurationVar(&cfg.UsagePeriod, "node-usage-period", 10*time.Second, "how often the pods' CPU and memory are sampled for the Node's minik8s.io/usage-* annotations (written on change or every minute); 1s to 1m, 0 for the default, negative disables")
	fs.DurationVar(&cfg.StreamIdleTimeout, "streaming-connection-idle-timeout", streaming.DefaultIdleTimeout, "how long an exec, attach or port-forward session may pass without data before it is closed")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long the kubelet may take to stop (containers keep running)")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])

	if nodeConfig != "" {
		c, err := nodestatus.LoadConfig(nodeConfig)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
			os.Exit(2)
		}
		cfg.Node = c
	} else {
		h, _ := os.Hostname()
		cfg.Node.Name = strings.ToLower(h)
	}
	if nodeName != "" {
		cfg.Node.Name = nodeName
	}
	if internalIP != "" {
		cfg.Node.Addresses.InternalIP = internalIP
	}
	if cfg.Kubeconfig == "" {
		cfg.Kubeconfig = filepath.Join(home(), "kubeconfigs", "node-"+cfg.Node.Name+".kubeconfig")
	}
	if cfg.RootDir == "" {
		cfg.RootDir = filepath.Join("/var/lib/minik8s/kubelet", cfg.Node.Name)
	}
	cfg.CNIBinDirs = strings.Split(cniDirs, ",")
	for _, ip := range strings.Split(clusterDNS, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			cfg.ClusterDNS = append(cfg.ClusterDNS, ip)
		}
	}
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("kubelet", os.Stderr).With("node", cfg.Node.Name)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("kubelet failed", "err", err)
		os.Exit(1)
	}
}
