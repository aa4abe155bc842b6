// Command dashboard serves minik8s' web dashboard: the cluster's nodes, workloads, pods,
// functions and events from the apiserver, with plots from Prometheus; image minik8s/dashboard.
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

	"minik8s.io/dashboard/internal/app"
)

func main() {
	var cfg app.Config
	flag.StringVar(&cfg.Listen, "listen", ":8080", "address to serve HTTP on")
	flag.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig to use instead of the in-cluster config")
	flag.StringVar(&cfg.PrometheusURL, "prometheus-url", "http://prometheus.minik8s-monitoring.svc:9090", "Prometheus' address (empty: through the apiserver's services proxy)")
	flag.StringVar(&cfg.PrometheusService, "prometheus-service", "minik8s-monitoring/prometheus:9090", "Prometheus' Service (namespace/name:port) when --prometheus-url is empty")
	flag.StringVar(&cfg.ChartJS, "chartjs", "/static/chart.min.js", "Chart.js' minified build to serve")
	flag.DurationVar(&cfg.Refresh, "refresh", 5*time.Second, "how often pages refresh")
	flag.Parse()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "dashboard")
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, logger); err != nil {
		logger.Error("exit", "err", err)
		os.Exit(1)
	}
}
