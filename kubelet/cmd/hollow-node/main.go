// Command hollow-node simulates many nodes in one process for scale tests: it registers
// --nodes Nodes named <prefix><i>, renews their Leases and reports every pod bound to them
// Running without starting containers (see kubelet/internal/hollow).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/hollow"
	"minik8s.io/shared/client"
	"minik8s.io/shared/logging"
	"minik8s.io/shared/workqueue/clock"
)

func main() {
	cfg := hollow.Defaults
	var kubeconfig string
	var qps float64
	var logOpts logging.Options
	fs := flag.NewFlagSet("hollow-node", flag.ExitOnError)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig allowed to write Nodes, Leases and pod status (admin is fine; default: the default kubeconfig)")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "how many nodes to simulate")
	fs.StringVar(&cfg.Prefix, "prefix", cfg.Prefix, "node i is named <prefix><i>")
	fs.DurationVar(&cfg.LeaseInterval, "lease-interval", cfg.LeaseInterval, "how often each node's Lease is renewed (spread over the period)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent registrations and pod status writes")
	fs.Float64Var(&qps, "qps", 0, "requests per second to the apiserver, all nodes together (0: unlimited)")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "hollow-node: %v\n", err)
		os.Exit(2)
	}
	if cfg.Nodes <= 0 || qps < 0 {
		fmt.Fprintln(os.Stderr, "hollow-node: --nodes must be positive and --qps not negative")
		os.Exit(2)
	}
	log := logOpts.Logger("hollow-node", os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, kubeconfig, qps, log); err != nil {
		log.Error("hollow-node failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg hollow.Config, kubeconfig string, qps float64, log *slog.Logger) error {
	ccfg, err := client.FromKubeconfig(kubeconfig)
	if err != nil {
		return fmt.Errorf("read kubeconfig: %w", err)
	}
	ccfg.UserAgent = "minik8s-hollow-node"
	ccfg.Timeout = time.Minute
	if qps > 0 {
		ccfg.QPS, ccfg.Burst = qps, int(qps)
	}
	c, err := client.New(ccfg)
	if err != nil {
		return err
	}
	api := hollow.API{
		Nodes:  client.MustFor[*corev1.Node, *corev1.NodeList](c),
		Leases: client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](c),
		Pods:   client.MustFor[*corev1.Pod, *corev1.PodList](c),
	}
	h := hollow.New(cfg, api, clock.Real{}, log)
	if err := h.Register(ctx); err != nil {
		return err
	}
	return h.Start(ctx)
}
