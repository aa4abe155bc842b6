package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"

	"minik8s.io/serverless/internal/autoscaler"
	"minik8s.io/serverless/internal/counters"
	"minik8s.io/serverless/internal/counters/redisstore"
	"minik8s.io/serverless/internal/function"
	"minik8s.io/serverless/internal/gateway"
	"minik8s.io/serverless/internal/workflow"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
	"minik8s.io/shared/run"
)

// firstListWait lets the caches' first lists wait for the bus's connect relist.
const firstListWait = 5 * time.Second

// Run runs the serverless component until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ccfg, err := client.FromKubeconfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	ccfg.UserAgent = "minik8s-serverless"
	cl, err := client.New(ccfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	cl = cl.WithLogger(log)
	host, _ := os.Hostname()
	reg := metrics.NewRegistry()
	recorder := record.New(record.Config{Component: "serverless", Host: host, Sink: record.NewAPISink(cl), Logger: log})
	factory := informer.NewFactory(informer.ClientSource(cl), informer.FactoryConfig{RelistPeriod: cfg.RelistPeriod,
		FirstListWait: firstListWait, Logger: log.With("part", "informers"), Metrics: reg.Informers()})

	images, err := newImages(cfg, ccfg.Token, log)
	if err != nil {
		return err
	}
	functions := factory.For(informer.Functions, nil)
	deployments := factory.For(informer.Deployments, nil)

	// Calls are counted in Redis, under a prefix of this cluster's own (its bus vhost), so the
	// gateways of one cluster share one view and two clusters on one Redis do not mix.
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer rdb.Close()
	store := redisstore.New(rdb, redisPrefix(cfg.AMQPURL), 0)
	calls := counters.NewRecorder(store, counters.RecorderConfig{Logger: log.With("part", "counters")})
	scaleAPI, err := autoscaler.NewClientAPI(cl)
	if err != nil {
		return err
	}
	scaler := autoscaler.New(autoscaler.Config{
		Functions: functions, Deployments: deployments, Counts: counters.NewReader(store), API: scaleAPI,
		Logger: log.With("part", "autoscaler"), Registerer: reg,
	})
	// Workflows call functions through the gateway, which serves POST /workflow with them.
	var gw *gateway.Gateway
	workflows := workflow.New(workflow.Config{
		API: workflow.ClientAPI(cl), Executions: factory.For(informer.WorkflowExecutions, nil),
		Invoker: workflow.InvokerFunc(func(ctx context.Context, namespace, name string, body []byte) ([]byte, error) {
			return gw.Call(ctx, namespace, name, body)
		}),
		Logger: log.With("part", "workflows"),
	})
	gw = gateway.New(gateway.Config{
		Functions: functions, Pods: factory.Pods(), Counter: calls, Activator: scaler, Workflows: workflows.Handler(),
		Registerer: reg, Healthy: factory.HasSynced, Logger: log.With("part", "gateway"),
	})
	controller := function.New(function.Config{
		FunctionInformer: functions, DeploymentInformer: deployments, NodeInformer: factory.Nodes(),
		Builder: images, Images: images, Caller: gw, Recorder: recorder, BuildTimeout: cfg.BuildTimeout,
		Options:     reconcile.Options{Workers: cfg.Workers, Resync: cfg.Resync, Metrics: reg, Logger: log.With("part", "functions")},
		Deployments: client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](cl),
		Functions:   client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](cl),
	})

	bindings, _ := bus.Bindings(bus.QueueServerless)
	b := amqpbus.New(amqpbus.Config{URL: cfg.AMQPURL, Name: "serverless", Logger: log.With("part", "bus")})
	defer b.Close()

	g := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	g.Add("recorder", recorder)
	g.Add("informers", factory)
	g.Add("bus", run.Func(func(ctx context.Context) error {
		return b.Consume(ctx, bus.Subscription{Queue: cfg.Queue, Bindings: bindings, Handler: factory.Handle, NoAck: true,
			OnConnect: func(context.Context) error { factory.RelistAll(); reg.BusConnected(); return nil }})
	}))
	g.Add("functions", controller)
	g.Add("counters", calls)
	g.Add("autoscaler", scaler)
	g.Add("gateway", gw)
	g.Add("workflows", workflows)
	g.Add("gateway-http", &run.HTTPServer{Name: "gateway", Drain: 10 * time.Second, Logger: log,
		Server: &http.Server{Addr: cfg.GatewayAddress, Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}})
	if cfg.MetricsAddress != "" {
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, cfg.MetricsAddress, reg, log) }))
	}
	log.Info("starting", "queue", cfg.Queue, "gateway", cfg.GatewayAddress, "redis", cfg.RedisAddr)
	return g.Run(ctx)
}

// clusterName names this cluster where several share one Redis or Docker engine: its bus
// vhost, of its own per cluster.
func clusterName(amqpURL string) string {
	if u, err := url.Parse(amqpURL); err == nil {
		if v := strings.Trim(u.Path, "/"); v != "" {
			return v
		}
	}
	return "default"
}

// redisPrefix is the Redis key prefix of this cluster's counters.
func redisPrefix(amqpURL string) string {
	return "minik8s:serverless:" + clusterName(amqpURL) + ":"
}
