package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
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
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/manager"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Run runs the serverless component until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// A private queue (tests) takes the serverless component's bindings.
	bindings, _ := bus.Bindings(bus.QueueServerless)
	m, err := manager.New(manager.Options{Name: "serverless", Kubeconfig: cfg.Kubeconfig, UserAgent: "minik8s-serverless",
		AMQPURL: cfg.AMQPURL, Queue: cfg.Queue, Bindings: bindings, RelistPeriod: cfg.RelistPeriod,
		MetricsAddress: cfg.MetricsAddress, ShutdownTimeout: cfg.ShutdownTimeout, Logger: log})
	if err != nil {
		return err
	}
	images, err := newImages(cfg, m.ClientConfig().Token, log)
	if err != nil {
		return err
	}
	cl, reg, factory := m.Client(), m.Metrics(), m.Informers()
	functions, deployments := factory.For(informer.Functions, nil), factory.For(informer.Deployments, nil)
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
	m.Add("functions", function.New(function.Config{
		FunctionInformer: functions, DeploymentInformer: deployments, NodeInformer: factory.Nodes(),
		Builder: images, Images: images, Caller: gw, Recorder: m.Recorder(), BuildTimeout: cfg.BuildTimeout,
		Options:     reconcile.Options{Workers: cfg.Workers, Resync: cfg.Resync, Metrics: reg, Logger: log.With("part", "functions")},
		Deployments: client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](cl),
		Functions:   client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](cl),
	}))
	m.Add("counters", calls)
	m.Add("autoscaler", scaler)
	m.Add("gateway", gw)
	m.Add("workflows", workflows)
	m.Add("gateway-http", &run.HTTPServer{Name: "gateway", Drain: 10 * time.Second, Logger: log,
		Server: &http.Server{Addr: cfg.GatewayAddress, Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}})
	log.Info("starting", "queue", cfg.Queue, "gateway", cfg.GatewayAddress, "redis", cfg.RedisAddr)
	return m.Start(ctx)
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
