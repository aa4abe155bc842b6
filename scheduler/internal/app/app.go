package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/scheduler/internal/scheduler"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/manager"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/run"
)

// Config is the scheduler's configuration, from flags.
type Config struct {
	Kubeconfig string
	AMQPURL    string
	Strategy   string
	// LeaderElect turns on the Lease election; off, this process always binds.
	LeaderElect bool
	// Identity names this process in the Lease; default hostname_pid.
	Identity        string
	LeaseNamespace  string
	LeaseName       string
	RelistPeriod    time.Duration
	ShutdownTimeout time.Duration
	// PercentageOfNodesToScore bounds each pod's search for feasible nodes: 0 adaptive, 100 all.
	PercentageOfNodesToScore int
	// DebugAddress, when set, serves Go's profiles (/debug/pprof/) there.
	DebugAddress string
	// MetricsAddress, when set, serves /metrics and /healthz there.
	MetricsAddress string
	// BindWorkers is how many bindings may be in flight at once; zero is the default.
	BindWorkers int
	// EventsQPS and EventsBurst throttle the Events the scheduler writes (0 QPS: unthrottled).
	EventsQPS   float64
	EventsBurst int
	// Procs is how many OS threads may run the scheduler's Go code at once (GOMAXPROCS);
	// 0 leaves Go's default, one per CPU. See DefaultProcs and ApplyProcs.
	Procs int
}

// DefaultProcs is Config.Procs from flags. The scheduler decides on one goroutine, and its
// other goroutines (the bus consumer, the informers' dispatchers, the bind workers) mostly
// hand work to one another. With more than one P each handoff wakes another thread, which on
// a machine whose cores the control plane shares costs more than it saves: in the scheduling
// benchmark one P took the scheduler's CPU per pod from 235-259 to 208-222 µs, with the same
// latency. One P still decides about 4000 pods a second.
const DefaultProcs = 1

// ApplyProcs sets GOMAXPROCS to procs unless the GOMAXPROCS environment variable (env)
// already chose (a positive integer: Go ignores anything else), or procs is 0; it returns
// the value in force.
func ApplyProcs(procs int, env string) int {
	if n, err := strconv.Atoi(env); (err == nil && n > 0) || procs <= 0 {
		return goruntime.GOMAXPROCS(0)
	}
	goruntime.GOMAXPROCS(procs)
	return procs
}

// Bounds of the flags Validate checks.
const (
	minEventsQPS   = 0.01
	maxEventsQPS   = 1e6
	maxBindWorkers = 1024
	maxProcs       = 1024
)

// Validate checks the configuration before anything starts.
func (c *Config) Validate() error {
	if _, err := framework.NewStrategy(c.Strategy, nil); err != nil {
		return fmt.Errorf("--strategy: %w", err)
	}
	if c.AMQPURL == "" {
		return errors.New("--amqp-url is empty")
	}
	if c.RelistPeriod <= 0 {
		return fmt.Errorf("--relist-period %s must be positive", c.RelistPeriod)
	}
	// NaN fails every comparison, so the checks are written to let only real values through.
	if !(c.EventsQPS == 0 || c.EventsQPS >= minEventsQPS && c.EventsQPS <= maxEventsQPS) {
		return fmt.Errorf("--events-qps %g must be 0 (no limit) or between %g and %g", c.EventsQPS, minEventsQPS, float64(maxEventsQPS))
	}
	if c.EventsBurst < 0 {
		return fmt.Errorf("--events-burst %d must not be negative", c.EventsBurst)
	}
	if c.BindWorkers < 0 || c.BindWorkers > maxBindWorkers {
		return fmt.Errorf("--bind-workers %d must be between 1 and %d (0 for the default %d)", c.BindWorkers, maxBindWorkers, scheduler.DefaultBindWorkers)
	}
	if c.DebugAddress != "" {
		if _, _, err := net.SplitHostPort(c.DebugAddress); err != nil {
			return fmt.Errorf("--debug-address %q: %w", c.DebugAddress, err)
		}
	}
	if err := metrics.ValidateAddress("--metrics-address", c.MetricsAddress); err != nil {
		return err
	}
	if c.Procs < 0 || c.Procs > maxProcs {
		return fmt.Errorf("--procs %d must be between 0 (one per CPU) and %d", c.Procs, maxProcs)
	}
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("--percentage-of-nodes-to-score %d must be between 0 (adaptive) and 100", c.PercentageOfNodesToScore)
	}
	return nil
}

// Run runs the scheduler until ctx ends. With leader election a standby keeps its caches
// warm and binds nothing until it leads and has caught up.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	strategy, err := framework.NewStrategy(cfg.Strategy, nil)
	if err != nil {
		return err
	}
	opts := manager.Options{Name: scheduler.Name, Kubeconfig: cfg.Kubeconfig, UserAgent: "minik8s-scheduler",
		AMQPURL: cfg.AMQPURL, Queue: bus.QueueScheduler, Unbind: bus.RetiredBindings(bus.QueueScheduler),
		RelistPeriod: cfg.RelistPeriod, EventsQPS: cfg.EventsQPS, EventsBurst: cfg.EventsBurst,
		MetricsAddress: cfg.MetricsAddress, DebugAddress: cfg.DebugAddress, ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	if cfg.LeaderElect {
		opts.LeaderElection = &manager.LeaderElection{Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName, Identity: cfg.Identity}
	}
	m, err := manager.New(opts)
	if err != nil {
		return err
	}
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_scheduler_schedule_attempts_total",
		Help: "Scheduling attempts that decided, by result: scheduled (bound), unschedulable (fits nowhere), error (the binding failed)."},
		[]string{"result"})
	for _, r := range []string{scheduler.AttemptScheduled, scheduler.AttemptUnschedulable, scheduler.AttemptError} {
		attempts.WithLabelValues(r)
	}
	m.Metrics().MustRegister(attempts)
	// Pods without the factory's node index: the scheduler's cache keeps its own per node.
	factory := m.Informers()
	podInf, nodeInf := factory.For(informer.Pods, nil), factory.Nodes()
	claimInf, volumeInf := factory.For("persistentvolumeclaims", nil), factory.For("persistentvolumes", nil)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](m.Client())
	gate := scheduler.NewGate(m.Leader(), scheduler.CatchUp(client.MustFor[*corev1.Node, *corev1.NodeList](m.Client()), pods, nodeInf, podInf), log)
	s := scheduler.New(scheduler.Config{
		API: apiWriter{cl: m.Client(), pods: pods}, Pods: informer.NewLister[*corev1.Pod](podInf.Store()),
		// The queue's time worked is a pod's decision and binding.
		Cache: cache.New(nil, 0), Queue: queue.New(nil, 0, 0, m.Metrics().Queue(scheduler.Name)), Strategy: strategy,
		Recorder: m.Recorder(), Leader: gate, Logger: log,
		PercentageOfNodesToScore: cfg.PercentageOfNodesToScore, BindWorkers: cfg.BindWorkers,
		Attempted: func(result string) { attempts.WithLabelValues(result).Inc() },
		Volumes: volumeCache{claims: informer.NewLister[*corev1.PersistentVolumeClaim](claimInf.Store()),
			volumes: informer.NewLister[*corev1.PersistentVolume](volumeInf.Store())},
	})
	podInf.AddEventHandler(s.PodHandler())
	nodeInf.AddEventHandler(s.NodeHandler())
	claimInf.AddEventHandler(s.VolumeHandler())
	volumeInf.AddEventHandler(s.VolumeHandler())
	m.Add("catch-up", gate)
	m.Add("scheduler", run.Func(func(ctx context.Context) error { return s.Run(ctx, factory.HasSynced, podInf, cfg.RelistPeriod) }))
	log.Info("starting", "strategy", strategy.Name(), "leaderElect", cfg.LeaderElect)
	return m.Start(ctx)
}
