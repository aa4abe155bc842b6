package autoscaler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik8s.io/serverless/internal/counters"
	"minik8s.io/shared/apierror"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/workqueue/clock"
)

// Counts is what the autoscaler reads of the gateways' counters (a *counters.Reader).
type Counts interface {
	Window(ctx context.Context, fn string, from, to int64) ([]counters.Bucket, error)
	LastCalls(ctx context.Context, fns []string) (map[string]time.Time, error)
	Forget(ctx context.Context, fn string) error
}

// Config wires an Autoscaler.
type Config struct {
	// Functions and Deployments are the informers of all Functions and Deployments.
	Functions, Deployments *informer.Informer
	Counts                 Counts
	API                    API
	// Interval between decisions about every function (default 2 s).
	Interval time.Duration
	// LastCallResolution: status.lastCallTime is written when the last call moved by at least
	// this much (default 5 s), so a busy function is not patched every decision.
	LastCallResolution time.Duration
	Clock              clock.Clock
	Logger             *slog.Logger
	// Registerer, when set, gets the autoscaler's gauges.
	Registerer prometheus.Registerer
}

// Autoscaler decides every Interval, for each Function, how many pods it runs, and sets its
// Deployment's replicas; an activation decides for one function at once.
type Autoscaler struct {
	cfg         Config
	functions   informer.Lister[*serverlessv1.Function]
	deployments informer.Lister[*appsv1.Deployment]
	wake        chan struct{}

	mu        sync.Mutex
	activated map[string]bool // functions a gateway asked for since the last decision
	states    map[string]State

	desired *prometheus.GaugeVec
	panic   *prometheus.GaugeVec
	scales  *prometheus.CounterVec
}

// New returns an autoscaler. It does no I/O.
func New(cfg Config) *Autoscaler {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.LastCallResolution <= 0 {
		cfg.LastCallResolution = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Autoscaler{
		cfg:         cfg,
		functions:   informer.NewLister[*serverlessv1.Function](cfg.Functions.Store()),
		deployments: informer.NewLister[*appsv1.Deployment](cfg.Deployments.Store()),
		wake:        make(chan struct{}, 1),
		activated:   map[string]bool{},
		states:      map[string]State{},
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "minik8s_serverless_autoscaler_desired_replicas",
			Help: "Pods the autoscaler asks for, by function (namespace/name)."}, []string{"function"}),
		panic: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "minik8s_serverless_autoscaler_panic",
			Help: "1 while the function is in panic mode, by function."}, []string{"function"}),
		scales: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_serverless_autoscaler_scales_total",
			Help: "Replica changes written, by reason of the decision (stable, panic, idle, activation, min, max, active)."}, []string{"reason"}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(a.desired, a.panic, a.scales)
	}
	return a
}

// Activate tells the autoscaler that a gateway holds a call of namespace/name and has no
// ready pod for it: the function is decided about at once and asks for at least one pod.
// It never blocks.
func (a *Autoscaler) Activate(namespace, name string) {
	a.mu.Lock()
	a.activated[namespace+"/"+name] = true
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Start decides every Interval and on activations until ctx ends. It returns nil.
func (a *Autoscaler) Start(ctx context.Context) error {
	a.cfg.Logger.Info("starting the function autoscaler", "interval", a.cfg.Interval)
	if !informer.WaitForSync(ctx, a.cfg.Functions.HasSynced, a.cfg.Deployments.HasSynced) {
		return nil
	}
	tick := a.cfg.Clock.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
			a.decideActivated(ctx)
		case <-tick.C():
			a.DecideAll(ctx)
			tick.Reset(a.cfg.Interval)
		}
	}
}

// decideActivated decides at once about the functions a gateway activated.
func (a *Autoscaler) decideActivated(ctx context.Context) {
	a.mu.Lock()
	keys := make([]string, 0, len(a.activated))
	for k := range a.activated {
		keys = append(keys, k)
	}
	a.mu.Unlock()
	var fns []*serverlessv1.Function
	for _, k := range keys {
		ns, name := splitKey(k)
		fn, err := a.functions.Get(ns, name)
		if err != nil {
			a.mu.Lock()
			delete(a.activated, k)
			a.mu.Unlock()
			continue
		}
		fns = append(fns, fn)
	}
	a.decide(ctx, fns)
}

// DecideAll decides about every Function once, and forgets the ones gone.
func (a *Autoscaler) DecideAll(ctx context.Context) {
	fns, err := a.functions.List(labels.Everything())
	if err != nil {
		a.cfg.Logger.Error("list functions", "err", err)
		return
	}
	a.decide(ctx, fns)
	live := make(map[string]bool, len(fns))
	for _, fn := range fns {
		live[fn.Namespace+"/"+fn.Name] = true
	}
	a.mu.Lock()
	var gone []string
	for k := range a.states {
		if !live[k] {
			gone = append(gone, k)
			delete(a.states, k)
		}
	}
	a.mu.Unlock()
	for _, k := range gone {
		a.desired.DeleteLabelValues(k)
		a.panic.DeleteLabelValues(k)
		if err := a.cfg.Counts.Forget(ctx, k); err != nil {
			a.cfg.Logger.Warn("forget the counters of a deleted function", "function", k, "err", err)
		}
	}
}

func (a *Autoscaler) decide(ctx context.Context, fns []*serverlessv1.Function) {
	if len(fns) == 0 {
		return
	}
	now := a.cfg.Clock.Now()
	keys := make([]string, len(fns))
	for i, fn := range fns {
		keys[i] = fn.Namespace + "/" + fn.Name
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lastCalls, err := a.cfg.Counts.LastCalls(rctx, keys)
	if err != nil {
		// Without last calls every idle function would look never called: decide nothing.
		a.cfg.Logger.Warn("read last calls", "err", err)
		return
	}
	for i, fn := range fns {
		a.decideOne(rctx, fn, keys[i], now, lastCalls[keys[i]])
	}
}

func (a *Autoscaler) decideOne(ctx context.Context, fn *serverlessv1.Function, key string, now time.Time, lastCall time.Time) {
	log := a.cfg.Logger.With("function", key)
	s := SettingsOf(fn)
	a.mu.Lock()
	activated := a.activated[key]
	delete(a.activated, key)
	prev := a.states[key]
	a.mu.Unlock()

	dep, err := a.deployments.Get(fn.Namespace, fn.Name)
	if err != nil {
		if !errors.Is(err, apierror.ErrNotFound) {
			log.Error("read deployment", "err", err)
		}
		if activated {
			// Not deployed yet (building): the activation counts as a call, so the pod is
			// asked for as soon as the Deployment exists.
			prev.LastCall = now
			a.mu.Lock()
			a.states[key] = prev
			a.mu.Unlock()
		}
		return
	}
	secs := int64(s.StableWindow / time.Second)
	buckets, err := a.cfg.Counts.Window(ctx, key, now.Unix()-secs, now.Unix()-1)
	if err != nil {
		log.Warn("read call counters", "err", err)
		return
	}
	d := Decide(s, prev, Observation{
		Now: now, Buckets: buckets, LastCall: lastCall, Activated: activated, ReadyPods: dep.Status.ReadyReplicas,
	})
	a.mu.Lock()
	a.states[key] = d.State
	a.mu.Unlock()
	a.desired.WithLabelValues(key).Set(float64(d.Desired))
	a.panic.WithLabelValues(key).Set(map[bool]float64{true: 1}[d.State.Panicking()])

	current := int32(1)
	if dep.Spec.Replicas != nil {
		current = *dep.Spec.Replicas
	}
	if d.Desired != current {
		if err := a.cfg.API.ScaleDeployment(ctx, fn.Namespace, fn.Name, d.Desired); err != nil {
			log.Warn("scale", "err", err)
			return
		}
		a.scales.WithLabelValues(d.Reason).Inc()
		log.Info("scaled function", "from", current, "to", d.Desired, "reason", d.Reason,
			"stableConcurrency", round(d.StableConcurrency), "panicConcurrency", round(d.PanicConcurrency),
			"stableRate", round(d.StableRate), "readyPods", dep.Status.ReadyReplicas)
	}

	var seen *time.Time
	if lc := d.State.LastCall; !lc.IsZero() {
		st := fn.Status.LastCallTime
		if st == nil || lc.Sub(st.Time) >= a.cfg.LastCallResolution {
			seen = &lc
		}
	}
	if seen != nil || fn.Status.DesiredReplicas != d.Desired {
		if err := a.cfg.API.PatchFunctionStatus(ctx, fn.Namespace, fn.Name, d.Desired, seen); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			log.Warn("record the decision in status", "err", err)
		}
	}
}

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func splitKey(k string) (namespace, name string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}
