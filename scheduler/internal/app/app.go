package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/scheduler/internal/scheduler"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/leaderelection"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/record"
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

// firstListWait bounds how long the first list waits for the bus (see
// informer.Config.FirstListWait): without a broker, the scheduler starts from the API alone.
const firstListWait = 5 * time.Second

// apiWriter binds pods and writes their status through the REST client.
type apiWriter struct {
	cl   *client.Client
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
}

func (a apiWriter) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	b := &corev1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if _, err := a.cl.Post().Resource(a.pods.Resource(), pod.Namespace, pod.Name, "binding").Body(b).Do(ctx); err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

func (a apiWriter) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	p, err := a.pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return p, nil
}

// Run runs the scheduler until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	ccfg, err := client.FromKubeconfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	ccfg.UserAgent = "minik8s-scheduler"
	cl, err := client.New(ccfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	strategy, err := framework.NewStrategy(cfg.Strategy, nil)
	if err != nil {
		return err
	}
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](cl)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](cl)
	leases := client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](cl)

	// The bus brings changes; the informers only list, on every (re)connect and every
	// RelistPeriod, so a lost message is repaired. The first list waits for the bus's queue
	// to be bound, so that it is also the connect's relist.
	reg := metrics.NewRegistry()
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_scheduler_schedule_attempts_total",
		Help: "Scheduling attempts that decided, by result: scheduled (bound), unschedulable (fits nowhere), error (the binding failed)."},
		[]string{"result"})
	for _, r := range []string{scheduler.AttemptScheduled, scheduler.AttemptUnschedulable, scheduler.AttemptError} {
		attempts.WithLabelValues(r)
	}
	reg.MustRegister(attempts)
	factory := informer.NewFactory(informer.ClientSource(cl), informer.FactoryConfig{
		RelistPeriod: cfg.RelistPeriod, FirstListWait: firstListWait, Logger: log, Metrics: reg.Informers()})
	// Pods without the factory's node index: the scheduler's cache keeps its own per node.
	podInf, nodeInf := factory.For(informer.Pods, nil), factory.Nodes()
	claimInf, volumeInf := factory.For("persistentvolumeclaims", nil), factory.For("persistentvolumes", nil)

	host, _ := os.Hostname()
	if cfg.Identity == "" {
		cfg.Identity = host + "_" + strconv.Itoa(os.Getpid())
	}
	recorder := record.New(record.Config{Component: scheduler.Name, Host: host, Sink: record.NewAPISink(cl), Logger: log,
		QPS: cfg.EventsQPS, Burst: cfg.EventsBurst})
	var elector *leaderelection.Elector
	var lead scheduler.Leader
	if cfg.LeaderElect {
		elector, err = leaderelection.New(leaderelection.Config{Leases: leases, Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName,
			Identity: cfg.Identity, Logger: log})
		if err != nil {
			return err
		}
		lead = elector
	}
	var gate *leaderGate
	if elector != nil {
		gate = &leaderGate{elector: elector}
		lead = gate
	}
	// The queue's time worked is a pod's decision and binding.
	q := queue.New(nil, 0, 0, reg.Queue(scheduler.Name))
	s := scheduler.New(scheduler.Config{
		API: apiWriter{cl: cl, pods: pods}, Pods: informer.NewLister[*corev1.Pod](podInf.Store()),
		Cache: cache.New(nil, 0), Queue: q, Strategy: strategy, Recorder: recorder, Leader: lead, Logger: log,
		PercentageOfNodesToScore: cfg.PercentageOfNodesToScore, BindWorkers: cfg.BindWorkers,
		Attempted: func(result string) { attempts.WithLabelValues(result).Inc() },
		Volumes: volumeCache{claims: informer.NewLister[*corev1.PersistentVolumeClaim](claimInf.Store()),
			volumes: informer.NewLister[*corev1.PersistentVolume](volumeInf.Store())},
	})
	podInf.AddEventHandler(s.PodHandler())
	nodeInf.AddEventHandler(s.NodeHandler())
	claimInf.AddEventHandler(s.VolumeHandler())
	volumeInf.AddEventHandler(s.VolumeHandler())

	b := amqpbus.New(amqpbus.Config{URL: cfg.AMQPURL, Name: "scheduler", Logger: log.With("part", "bus")})
	defer b.Close()
	bindings, _ := bus.Bindings(bus.QueueScheduler)

	log.Info("starting", "strategy", strategy.Name(), "leaderElect", cfg.LeaderElect, "identity", cfg.Identity)
	g := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	g.Add("recorder", recorder)
	g.Add("informers", factory)
	// No acks: the handler never fails (the relist repairs what a bad message meant), and
	// OnConnect relists, which repairs what a lost connection took with it.
	sub := bus.Subscription{Queue: bus.QueueScheduler, Bindings: bindings, Unbind: bus.RetiredBindings(bus.QueueScheduler), Handler: factory.Handle, NoAck: true,
		OnConnect: func(context.Context) error {
			factory.RelistAll()
			reg.BusConnected()
			return nil
		}}
	g.Add("bus", run.Func(func(ctx context.Context) error {
		var l scheduler.Leader
		if elector != nil {
			l = elector
		}
		return consumeWhileLeading(ctx, b, sub, l)
	}))
	if elector != nil {
		g.Add("leader", elector)
		g.Add("catch-up", run.Func(func(ctx context.Context) error {
			return gate.run(ctx, log, func(ctx context.Context) error {
				return catchUp(ctx, pods, nodes, podInf, nodeInf)
			})
		}))
	}
	if cfg.MetricsAddress != "" {
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, cfg.MetricsAddress, reg, log) }))
	}
	if cfg.DebugAddress != "" {
		g.Add("debug", run.Func(func(ctx context.Context) error { return metrics.ServeDebug(ctx, cfg.DebugAddress, log) }))
	}
	g.Add("scheduler", run.Func(func(ctx context.Context) error {
		// Scheduling from a partial cache would overcommit nodes whose pods are not listed yet.
		for !factory.HasSynced() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		}
		log.Info("caches synced")
		go sweepLoop(ctx, s, podInf, cfg.RelistPeriod)
		return s.Start(ctx)
	}))
	return g.Run(ctx)
}

// consumeWhileLeading consumes the scheduler queue only while this process leads. All
// schedulers share one durable queue, and the broker splits a queue's messages among its
// consumers: a standby consuming too would take half of the leader's hints. A standby keeps
// its cache from the periodic relist, and relists at once when it takes over (OnConnect).
func consumeWhileLeading(ctx context.Context, b bus.Consumer, sub bus.Subscription, lead scheduler.Leader) error {
	if lead == nil {
		return b.Consume(ctx, sub)
	}
	const poll = 200 * time.Millisecond
	for {
		for !lead.IsLeader() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		}
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			for lead.IsLeader() {
				select {
				case <-lctx.Done():
					return
				case <-time.After(poll):
				}
			}
			cancel()
		}()
		err := b.Consume(lctx, sub)
		cancel()
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// leaderGate lets the scheduling loop act only once this process leads and its cache has
// caught up since it took over: a standby's cache is only as fresh as its last periodic
// relist, and scheduling from it would bind pods already bound or onto nodes since cordoned.
type leaderGate struct {
	elector  *leaderelection.Elector
	caughtUp atomic.Bool
}

func (g *leaderGate) IsLeader() bool { return g.caughtUp.Load() && g.elector.IsLeader() }

// run watches leadership and calls catchUp at the start of every term.
func (g *leaderGate) run(ctx context.Context, log *slog.Logger, catchUp func(context.Context) error) error {
	const poll = 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
		leading := g.elector.IsLeader()
		switch {
		case !leading:
			g.caughtUp.Store(false)
		case !g.caughtUp.Load():
			if err := catchUp(ctx); err != nil {
				log.Warn("catching up after taking the lead", "err", err)
				continue
			}
			log.Info("caught up; scheduling")
			g.caughtUp.Store(true)
		}
	}
}

// catchUp lists nodes and pods and applies them to the informers (stale items are dropped by
// resourceVersion), then asks for a full relist to notice deletions.
func catchUp(ctx context.Context, pods *client.Typed[*corev1.Pod, *corev1.PodList], nodes *client.Typed[*corev1.Node, *corev1.NodeList], podInf, nodeInf *informer.Informer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nl, err := nodes.List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for i := range nl.Items {
		if _, err := nodeInf.Apply(watch.Modified, &nl.Items[i]); err != nil {
			return fmt.Errorf("apply node: %w", err)
		}
	}
	pl, err := pods.List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pl.Items {
		if _, err := podInf.Apply(watch.Modified, &pl.Items[i]); err != nil {
			return fmt.Errorf("apply pod: %w", err)
		}
	}
	podInf.RequestRelist()
	nodeInf.RequestRelist()
	return nil
}

// sweepLoop hands the scheduler every cached pod once per period, so a pending pod that no
// queue holds (which would be a bug) waits one period instead of forever.
func sweepLoop(ctx context.Context, s *scheduler.Scheduler, podInf *informer.Informer, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		objs := podInf.Store().List()
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
		s.Sweep(pods)
	}
}

// volumeCache is the scheduler's view of claims and volumes, from its informers.
type volumeCache struct {
	claims  informer.Lister[*corev1.PersistentVolumeClaim]
	volumes informer.Lister[*corev1.PersistentVolume]
}

func (v volumeCache) Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	c, err := v.claims.Get(namespace, name)
	return c, err == nil
}

func (v volumeCache) Volume(name string) (*corev1.PersistentVolume, bool) {
	pv, err := v.volumes.Get("", name)
	return pv, err == nil
}
