// Command serverless runs minik8s' serverless component: the function controller (images,
// Deployments, schedules), the gateway that calls functions and scales them on request counts,
// and the workflow engine, reading and writing only through the apiserver.
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

	"minik8s.io/serverless/internal/app"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/logging"
)

func defaultKubeconfig() string {
	h, err := kubeconfig.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "kubeconfigs", "serverless.kubeconfig")
}

func main() {
	var cfg app.Config
	var logOpts logging.Options
	fs := flag.NewFlagSet("serverless", flag.ExitOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", defaultKubeconfig(), "kubeconfig ($MINIK8S_HOME/kubeconfigs/serverless.kubeconfig, written by the apiserver)")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	fs.StringVar(&cfg.Queue, "queue", "serverless", "bus queue to consume")
	fs.StringVar(&cfg.RedisAddr, "redis-addr", "127.0.0.1:6379", "Redis (host:port) the gateways count calls in")
	fs.StringVar(&cfg.GatewayAddress, "gateway-address", "127.0.0.1:8090", "host:port the gateway serves POST /function/<ns>/<name> and /workflow/<ns>/<name> on")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "127.0.0.1:10253", "host:port of /metrics (Prometheus) and /healthz, served without authentication; empty: off")
	fs.StringVar(&cfg.DockerHost, "docker-host", "", "Docker engine function images are built on (default: $DOCKER_HOST or the local socket)")
	fs.StringVar(&cfg.RuntimeImage, "runtime-image", "minik8s/python-runtime:latest", "base image of function images (built by make images)")
	pipArgs := fs.String("pip-args", "", "extra arguments of pip install in function builds, space-separated (e.g. '--index-url http://mirror/simple')")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", 5*time.Minute, "how often every cache is relisted from the API (the bus is a hint)")
	fs.IntVar(&cfg.Workers, "concurrent-function-syncs", 4, "functions reconciled at once")
	fs.DurationVar(&cfg.Resync, "function-resync-period", time.Minute, "how often every function is revisited and images of deleted functions are looked for")
	fs.DurationVar(&cfg.BuildTimeout, "build-timeout", 10*time.Minute, "most time one function image build may take")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long the component may take to stop")
	logOpts.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	cfg.PipArgs = strings.Fields(*pipArgs)
	if err := logOpts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "serverless: %v\n", err)
		os.Exit(2)
	}
	log := logOpts.Logger("serverless", os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		log.Error("serverless failed", "err", err)
		os.Exit(1)
	}
}
