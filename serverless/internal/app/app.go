package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"minik8s.io/serverless/internal/function"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/metrics"
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

	images, err := newImages(cfg, log)
	if err != nil {
		return err
	}
	functions := factory.For(informer.Functions, nil)
	controller := function.New(function.Config{
		Functions: functions, Deployments: factory.For(informer.Deployments, nil), Nodes: factory.Nodes(),
		API: function.ClientAPI(cl), Builder: images, Images: images, Recorder: recorder,
		Workers: cfg.Workers, Resync: cfg.Resync, BuildTimeout: cfg.BuildTimeout,
		Metrics: reg, Logger: log.With("part", "functions"),
	})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !factory.HasSynced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
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
	g.Add("gateway", run.Func(func(ctx context.Context) error { return serveHTTP(ctx, cfg.GatewayAddress, mux, log) }))
	if cfg.MetricsAddress != "" {
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, cfg.MetricsAddress, reg, log) }))
	}
	log.Info("starting", "queue", cfg.Queue, "gateway", cfg.GatewayAddress, "redis", cfg.RedisAddr)
	return g.Run(ctx)
}

// serveHTTP serves h on addr until ctx ends, then lets calls under way finish for a while.
func serveHTTP(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("gateway listening", "address", l.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
