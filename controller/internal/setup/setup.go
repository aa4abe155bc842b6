package setup

import (
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
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
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

	// ReplicaSetWorkers, ReplicationControllerWorkers and DeploymentWorkers are how many
	// ReplicaSets, ReplicationControllers and Deployments are reconciled at once (Kubernetes'
	// --concurrent-replicaset-syncs, --concurrent-rc-syncs, --concurrent-deployment-syncs).
	ReplicaSetWorkers            int
	ReplicationControllerWorkers int
	DeploymentWorkers            int

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
	if c.EndpointWorkers <= 0 {
		c.EndpointWorkers = 5
	}
	if c.EndpointResync <= 0 {
		c.EndpointResync = time.Minute
	}
	if c.ReplicaSetWorkers <= 0 {
		c.ReplicaSetWorkers = 5
	}
	if c.ReplicationControllerWorkers <= 0 {
		c.ReplicationControllerWorkers = 5
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
	// Deletions reports deleted custom objects, which no informer caches (nil: not followed).
	Deletions *Deletions
}

// EndpointOptions are the work loop's options of the Endpoints and EndpointSlice controllers
// (Kubernetes' --concurrent-endpoint-syncs, and their resync).
func (c *Context) EndpointOptions() reconcile.Options {
	return reconcile.Options{Workers: c.Config.EndpointWorkers, Resync: c.Config.EndpointResync, Logger: c.Logger}
}
