package app

import (
	"context"
	"log/slog"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/manager"
)

// Leader election Lease, as kube-controller-manager's.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "kube-controller-manager"
)

// Config is the controller-manager's configuration, from flags.
type Config = setup.Config

// Context is what a controller's Setup gets.
type Context = setup.Context

// Run runs the controller-manager until ctx ends: the controllers run while this process holds
// the Lease (always, without --leader-elect), and it exits when it loses it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := validateControllers(cfg.Controllers); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	opts := manager.Options{Name: "controller-manager", Host: cfg.Identity, Kubeconfig: cfg.Kubeconfig,
		AMQPURL: cfg.AMQPURL, Queue: cfg.Queue, RelistPeriod: cfg.RelistPeriod,
		MetricsAddress: cfg.MetricsAddress, DebugAddress: cfg.DebugAddress, ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	if bindings, ok := bus.Bindings(bus.QueueControllerManager); ok {
		// A private queue (tests) takes the controller-manager's bindings.
		opts.Bindings = bindings
	}
	// The bus's messages go to the informers, and custom objects' deletions, which no
	// informer caches, to the controllers that follow them (the garbage collector). Neither
	// fails, so the queue is still consumed without acknowledgements.
	deletions := &setup.Deletions{}
	var m *manager.Manager
	opts.BusHandler = func(ctx context.Context, d bus.Delivery) error {
		deletions.Observe(d)
		return m.Informers().Handle(ctx, d)
	}
	opts.BusNoAck = true
	if cfg.LeaderElect {
		opts.LeaderElection = &manager.LeaderElection{Namespace: LeaseNamespace, Name: LeaseName, Identity: cfg.Identity,
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod}
	}
	m, err := manager.New(opts)
	if err != nil {
		return err
	}
	cctx := &Context{Config: cfg, ClientConfig: m.ClientConfig(), Client: m.Client(), Informers: m.Informers(),
		Recorder: m.Recorder(), Logger: log, Deletions: deletions}
	// Controllers are built before the informers start: they ask for the caches they read.
	for _, c := range controllers {
		if enabled(cfg.Controllers, c.name) {
			m.AddLeading(c.name, c.new(cctx))
		}
	}
	return m.Start(ctx)
}
