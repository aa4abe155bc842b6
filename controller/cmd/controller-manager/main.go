// Command controller-manager runs minik8s' cluster-wide controllers (node lifecycle,
// Endpoints, EndpointSlices, Ingress, PersistentVolumes) against the apiserver, one active replica at a time when leader election is on.
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

	"minik8s.io/controller/internal/app"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func defaultKubeconfig() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "kubeconfigs", "controller-manager.kubeconfig")
}

func defaultPVRoot() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "volumes")
}

func main() {
	var cfg app.Config
	var logOpts logging.Options
	fs := flag.NewFlagSet("controller-manager", flag.ExitOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", defaultKubeconfig(), "kubeconfig ($MINIK8S_HOME/kubeconfigs/controller-manager.kubeconfig, written by the apiserver)")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	fs.StringVar(&cfg.Queue, "queue", "controller-manager", "bus queue to consume")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", 5*time.Minute, "how often every cache is relisted from the API (the bus is a hint)")
	controllers := fs.String("controllers", "*", "controllers to run, comma-separated: '*' is all, 'name' enables one, '-name' disables one (known: "+strings.Join(app.ControllerNames(), ", ")+")")
	fs.IntVar(&cfg.EndpointWorkers, "concurrent-endpoint-syncs", 5, "Services the Endpoints and EndpointSlice controllers each reconcile at once")
	fs.DurationVar(&cfg.EndpointResync, "endpoint-resync-period", time.Minute, "how often the Endpoints and EndpointSlice controllers revisit every Service")
	fs.IntVar(&cfg.ReplicaSetWorkers, "concurrent-replicaset-syncs", 5, "ReplicaSets the ReplicaSet controller reconciles at once")
	fs.IntVar(&cfg.ReplicationControllerWorkers, "concurrent-rc-syncs", 5, "ReplicationControllers the replication controller reconciles at once")
	fs.IntVar(&cfg.DeploymentWorkers, "concurrent-deployment-syncs", 5, "Deployments the Deployment controller reconciles at once")
	fs.DurationVar(&cfg.HPASyncPeriod, "horizontal-pod-autoscaler-sync-period", 15*time.Second, "How often each HorizontalPodAutoscaler's metrics are looked at and its target rescaled")
	fs.IntVar(&cfg.MaxEndpointsPerSlice, "max-endpoints-per-slice", 100, "most endpoints in one EndpointSlice (1-1000)")
	fs.StringVar(&cfg.IngressClass, "ingress-class", "nginx", "IngressClass the Ingress controller serves, made at start (the default class unless another is) when missing")
	fs.StringVar(&cfg.IngressNamespace, "ingress-nginx-namespace", "minik8s-ingress", "namespace of the nginx pods and of their Service ingress-nginx")
	fs.StringVar(&cfg.IngressNginxImage, "ingress-nginx-image", "minik8s/nginx:1.0", "image of the nginx pods (built by make images)")
	fs.IntVar(&cfg.IngressNginxReplicas, "ingress-nginx-replicas", 1, "how many nginx pods serve the Ingresses")
	fs.IntVar(&cfg.IngressNodePort, "ingress-nginx-node-port", 0, "node port of the ingress-nginx Service (0: allocated)")
	fs.StringVar(&cfg.PVRoot, "pv-root", defaultPVRoot(), "directory the volumes of the minik8s.io/hostpath-shared provisioner are made in, the same path on every node (an NFS mount on several machines)")
	fs.StringVar(&cfg.DefaultStorageClass, "default-storage-class", "standard", "StorageClass (ours, marked default) made at start when no class is marked default; empty makes none")
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "how old a node's Lease may get before the node is marked Ready=Unknown and tainted unreachable")
	fs.DurationVar(&cfg.PodEvictionTimeout, "pod-eviction-timeout", 300*time.Second, "how long pods without their own toleration stay on an unreachable node before they are deleted")
	fs.DurationVar(&cfg.NodeMonitorPeriod, "node-monitor-period", 5*time.Second, "how often every node is checked")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", true, "run the controllers only while holding the Lease kube-system/kube-controller-manager")
	fs.StringVar(&cfg.Identity, "leader-elect-identity", "", "this candidate's identity (default: hostname_<random>)")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long candidates wait after the leader's last renewal")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it stops")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long the controller-manager may take to stop")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "127.0.0.1:10252", "host:port of /metrics (Prometheus) and /healthz, served without authentication; empty: off")
	fs.StringVar(&cfg.DebugAddress, "debug-address", "", "serve Go's profiles (/debug/pprof/), without authentication, on this host:port, e.g. 127.0.0.1:10257; empty: off")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	for _, c := range strings.Split(*controllers, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cfg.Controllers = append(cfg.Controllers, c)
		}
	}
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "controller-manager: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("controller-manager", os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("controller-manager failed", "err", err)
		os.Exit(1)
	}
}
