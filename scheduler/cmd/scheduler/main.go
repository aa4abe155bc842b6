// Command scheduler is the minik8s scheduler: it binds pending pods to nodes. Several may run;
// the one holding the kube-scheduler Lease binds.
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

	"minik8s.io/scheduler/internal/app"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/scheduler"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func main() {
	var cfg app.Config
	var logOpts logging.Options
	home, err := kubeconfig.Home()
	if err != nil {
		home = ".minik8s"
	}
	fs := flag.NewFlagSet("scheduler", flag.ExitOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", filepath.Join(home, "kubeconfigs", "scheduler.kubeconfig"), "kubeconfig of the scheduler")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	fs.StringVar(&cfg.Strategy, "strategy", framework.StrategyBalanced, "how to pick a node: "+strings.Join(framework.StrategyNames, "|"))
	fs.IntVar(&cfg.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0,
		"share of the nodes (in %) a pod's search for feasible nodes may stop at once enough are found; 0 adapts it to the cluster's size (50% minus 1% per 125 nodes, at least 5% and 100 nodes), 100 looks at every node")
	fs.IntVar(&cfg.BindWorkers, "bind-workers", scheduler.DefaultBindWorkers, "bindings in flight at once (each is a round trip to the apiserver); 1 to 1024, 0 for the default")
	fs.Float64Var(&cfg.EventsQPS, "events-qps", 50, "Events written per second at most (Scheduled, FailedScheduling); beyond --events-burst and a buffer of 1000 they are dropped, as kube-scheduler's are; 0.01 to 1e6, 0: no limit")
	fs.IntVar(&cfg.EventsBurst, "events-burst", 100, "Events written at once before --events-qps applies")
	fs.StringVar(&cfg.DebugAddress, "debug-address", "", "serve Go's profiles (/debug/pprof/), without authentication, on this host:port, e.g. 127.0.0.1:10259; empty: off")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", true, "elect a leader through a Lease so that only one scheduler binds")
	fs.StringVar(&cfg.Identity, "leader-elect-identity", "", "this process's name in the Lease (default: hostname_<random>)")
	fs.StringVar(&cfg.LeaseNamespace, "leader-elect-resource-namespace", "kube-system", "namespace of the election Lease")
	fs.StringVar(&cfg.LeaseName, "leader-elect-resource-name", "kube-scheduler", "name of the election Lease")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", time.Minute, "how often pods and nodes are relisted (the bus is a hint)")
	fs.IntVar(&cfg.Procs, "procs", app.DefaultProcs, "OS threads that may run the scheduler's Go code at once (GOMAXPROCS); one spares the cross-thread wakeups of its goroutines' handoffs; 0: one per CPU. A GOMAXPROCS environment variable wins")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long the scheduler may take to stop")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "127.0.0.1:10251", "host:port of /metrics (Prometheus) and /healthz, served without authentication; empty: off")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "scheduler: %v\n", err)
		os.Exit(2)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "scheduler: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("scheduler", os.Stderr)
	log.Info("threads", "gomaxprocs", app.ApplyProcs(cfg.Procs, os.Getenv("GOMAXPROCS")))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("scheduler failed", "err", err)
		os.Exit(1)
	}
}
