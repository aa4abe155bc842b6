package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/leaderelection"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
	"minik8s.io/shared/run"
)

// Leader election Lease, as kube-controller-manager's.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "kube-controller-manager"
)

// Config is the controller-manager's configuration, from flags.
type Config struct {
	Kubeconfig string
	AMQPURL    string
	// Queue is the bus queue consumed; tests use a private one so they do not steal a
	// running cluster's messages.
	Queue string
	// RelistPeriod is how often every cache is relisted, the safety net under the bus.
	RelistPeriod time.Duration

	// Controllers selects the controllers to run, as Kubernetes' --controllers: "*" (all),
	// "name", "-name"; empty means all.
	Controllers []string

	NodeMonitorGracePeriod time.Duration
	PodEvictionTimeout     time.Duration
	NodeMonitorPeriod      time.Duration

	// EndpointWorkers is how many Services the Endpoints and EndpointSlice controllers each
	// reconcile at once (Kubernetes' --concurrent-endpoint-syncs); EndpointResync is how often
	// they revisit every Service whatever the events said.
	EndpointWorkers      int
	EndpointResync       time.Duration
	MaxEndpointsPerSlice int

	// ReplicaSetWorkers and DeploymentWorkers are how many ReplicaSets and Deployments are
	// reconciled at once (Kubernetes' --concurrent-replicaset-syncs, --concurrent-deployment-syncs).
	ReplicaSetWorkers int
	DeploymentWorkers int

	// HPASyncPeriod is how often each HorizontalPodAutoscaler is evaluated (Kubernetes'
	// --horizontal-pod-autoscaler-sync-period, 15 s).
	HPASyncPeriod time.Duration

	// The Ingress controller: the class it serves, and the nginx it runs.
	IngressClass         string
	IngressNamespace     string
	IngressNginxImage    string
	IngressNginxReplicas int
	IngressNodePort      int

	// The PersistentVolume binder: the directory its provisioned volumes live under (the same
	// path on every node) and the default StorageClass it makes when there is none.
	PVRoot              string
	DefaultStorageClass string

	LeaderElect bool
	// Identity tells the candidates apart; default hostname_<random>.
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	ShutdownTimeout time.Duration

	// MetricsAddress is where /metrics and /healthz are served (host:port); empty: nowhere.
	MetricsAddress string
	// DebugAddress, when set, serves Go's profiles (/debug/pprof/) there (host:port).
	DebugAddress string
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if err := validateControllers(c.Controllers); err != nil {
		return err
	}
	if c.EndpointWorkers <= 0 {
		c.EndpointWorkers = 5
	}
	if c.EndpointResync <= 0 {
		c.EndpointResync = time.Minute
	}
	if c.ReplicaSetWorkers <= 0 {
		c.ReplicaSetWorkers = 5
	}
	if c.DeploymentWorkers <= 0 {
		c.DeploymentWorkers = 5
	}
	if c.MaxEndpointsPerSlice <= 0 || c.MaxEndpointsPerSlice > 1000 {
		c.MaxEndpointsPerSlice = 100
	}
	if c.IngressNodePort != 0 && (c.IngressNodePort < 30000 || c.IngressNodePort > 32767) {
		return fmt.Errorf("--ingress-nginx-node-port must be 0 (allocated) or in 30000-32767, got %d", c.IngressNodePort)
	}
	if c.PVRoot != "" && !filepath.IsAbs(c.PVRoot) {
		return fmt.Errorf("--pv-root must be an absolute path, got %q", c.PVRoot)
	}
	if c.Queue == "" {
		c.Queue = bus.QueueControllerManager
	}
	if c.RelistPeriod <= 0 {
		c.RelistPeriod = 5 * time.Minute
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--node-monitor-grace-period", c.NodeMonitorGracePeriod},
		{"--pod-eviction-timeout", c.PodEvictionTimeout},
		{"--node-monitor-period", c.NodeMonitorPeriod},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be positive, got %s", d.name, d.v)
		}
	}
	if err := metrics.ValidateAddress("--metrics-address", c.MetricsAddress); err != nil {
		return err
	}
	if err := metrics.ValidateAddress("--debug-address", c.DebugAddress); err != nil {
		return err
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		c.Identity = host + "_" + hex.EncodeToString(b)
	}
	return nil
}

// Context is what a controller's constructor gets: the configuration and the shared parts.
type Context struct {
	Config Config
	// ClientConfig is the connection Client uses, for the streaming clients (pods/exec).
	ClientConfig *client.Config
	Client       *client.Client
	Informers    *informer.Factory
	Recorder     *record.Recorder
	Logger       *slog.Logger
}

// Run runs the controller-manager until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ccfg, err := client.FromKubeconfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cl, err := client.New(ccfg)
	if err != nil {
		return err
	}
	cl = cl.WithLogger(log)
	reg := metrics.NewRegistry()
	// Every loop and queue a controller makes from here on reports to reg.
	reconcile.SetMetrics(reg)
	recorder := record.New(record.Config{Component: "controller-manager", Host: cfg.Identity, Sink: record.NewAPISink(cl), Logger: log})
	factory := informer.NewFactory(informer.ClientSource(cl), informer.FactoryConfig{RelistPeriod: cfg.RelistPeriod,
		// The bus consumer's OnConnect relists every cache once its queue is bound; the
		// first lists wait for it rather than list twice.
		FirstListWait: 5 * time.Second, Logger: log.With("part", "informers"), Metrics: reg.Informers()})
	cctx := &Context{Config: cfg, ClientConfig: ccfg, Client: cl, Informers: factory, Recorder: recorder, Logger: log}
	// Controllers are built before the informers start: they ask for the caches they read.
	controllersGroup := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	var running []string
	for _, c := range controllers {
		if enabled(cfg.Controllers, c.name) {
			controllersGroup.Add(c.name, c.new(cctx))
			running = append(running, c.name)
		}
	}

	bindings, ok := bus.Bindings(bus.QueueControllerManager)
	if !ok {
		return errors.New("no bus bindings for the controller-manager queue")
	}
	for _, r := range unbound(factory.Resources(), bindings) {
		log.Warn("the bus queue is not bound to a resource a controller caches: its cache follows the relists alone", "resource", r, "relistPeriod", cfg.RelistPeriod)
	}
	b := amqpbus.New(amqpbus.Config{URL: cfg.AMQPURL, Name: "controller-manager", Logger: log.With("part", "bus")})
	defer b.Close()

	g := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	g.Add("recorder", recorder)
	g.Add("informers", factory)
	if cfg.MetricsAddress != "" {
		// A standby serves its metrics too: its caches and bus are worth watching.
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, cfg.MetricsAddress, reg, log) }))
	}
	if cfg.DebugAddress != "" {
		g.Add("debug", run.Func(func(ctx context.Context) error { return metrics.ServeDebug(ctx, cfg.DebugAddress, log) }))
	}
	// Only the leader consumes: every controller-manager shares one durable queue, and the
	// broker splits a queue's messages among its consumers, so a standby consuming too would
	// take half of the leader's changes. A standby's caches follow the periodic relist; the
	// new leader's connect relists them all (OnConnect).
	controllersGroup.Add("bus", run.Func(func(ctx context.Context) error {
		return b.Consume(ctx, bus.Subscription{
			Queue: cfg.Queue, Bindings: bindings, Handler: factory.Handle,
			// Handle never fails (what it cannot apply, the relist repairs), so the broker
			// need not track acknowledgements.
			NoAck: true,
			// Anything changed from now on is in the queue: relist to catch up on the rest.
			OnConnect: func(context.Context) error { factory.RelistAll(); reg.BusConnected(); return nil },
		})
	}))
	runControllers := controllersGroup.Run
	if cfg.LeaderElect {
		elector, err := leaderelection.New(leaderelection.Config{
			Leases:    client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](cl),
			Namespace: LeaseNamespace, Name: LeaseName, Identity: cfg.Identity,
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
			Logger: log,
		})
		if err != nil {
			return err
		}
		// One term: losing the lease ends the process with ErrLostLeadership.
		runControllers = func(ctx context.Context) error { return elector.Run(ctx, controllersGroup.Run) }
	}
	g.Add("controllers", run.Func(runControllers))
	log.Info("starting", "identity", cfg.Identity, "leaderElect", cfg.LeaderElect, "queue", cfg.Queue, "controllers", running)
	return g.Run(ctx)
}

// unbound returns the resources whose changes none of the bindings takes.
func unbound(resources, bindings []string) []string {
	var out []string
	for _, r := range resources {
		key := bus.RoutingKey(r, "", "x", nil, nil, "MODIFIED")
		if !slices.ContainsFunc(bindings, func(p string) bool { return bus.Match(p, key) }) {
			out = append(out, r)
		}
	}
	return out
}
