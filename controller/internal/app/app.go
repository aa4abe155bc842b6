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
	"time"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/manager"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/record"
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

// Run runs the controller-manager until ctx ends: the controllers run while this process holds
// the Lease (always, without --leader-elect), and it exits when it loses it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
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
	if cfg.LeaderElect {
		opts.LeaderElection = &manager.LeaderElection{Namespace: LeaseNamespace, Name: LeaseName, Identity: cfg.Identity,
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod}
	}
	m, err := manager.New(opts)
	if err != nil {
		return err
	}
	cctx := &Context{Config: cfg, ClientConfig: m.ClientConfig(), Client: m.Client(), Informers: m.Informers(),
		Recorder: m.Recorder(), Logger: log}
	// Controllers are built before the informers start: they ask for the caches they read.
	for _, c := range controllers {
		if enabled(cfg.Controllers, c.name) {
			m.AddLeading(c.name, c.new(cctx))
		}
	}
	return m.Start(ctx)
}
