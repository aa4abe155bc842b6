package nodenet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/workqueue/clock"
)

// Defaults of ReconcilerConfig.
const (
	// DefaultResyncPeriod is how often everything is checked without a Node change: it puts
	// back a route or rule someone removed by hand (or a Docker restart that rewrote FORWARD).
	DefaultResyncPeriod = time.Minute
	minRetry            = 500 * time.Millisecond
	maxRetry            = 30 * time.Second
	// unsyncedRetry is how soon a sync asked for before the node cache's first list looks
	// again: the cache's handlers trigger the reconciler just before it counts as synced.
	unsyncedRetry = 200 * time.Millisecond
)

// Nodes is the node cache: its Nodes and whether it has listed once. Until it has, the
// reconciler changes nothing, so a kubelet starting up never removes the routes that work.
type Nodes interface {
	List() []*corev1.Node
	HasSynced() bool
}

// ReconcilerConfig configures a Reconciler.
type ReconcilerConfig struct {
	Config
	// ClusterCIDR is the whole pod network (--cluster-cidr): what is masqueraded when it
	// leaves it and accepted in FORWARD.
	ClusterCIDR  netip.Prefix
	ResyncPeriod time.Duration
	Clock        clock.Clock
	Logger       *slog.Logger
}

// Reconciler keeps the node's routes, VXLAN entries and iptables rules as the Nodes want
// them. Trigger it on every Node change; Start runs it.
type Reconciler struct {
	cfg    ReconcilerConfig
	kernel Kernel
	ipt    IPTables // nil: no rules (the kubelet logged why)
	self   func() Peer
	nodes  Nodes
	log    *slog.Logger

	trigger chan struct{}

	mu        sync.Mutex
	rulesDue  bool
	lastRules RuleSet
}

var errNotSynced = errors.New("the node cache has not listed yet")

// NewReconciler returns a reconciler; it does no I/O. self reports this node as it is known
// now (its pod CIDR arrives after registration).
func NewReconciler(cfg ReconcilerConfig, kernel Kernel, ipt IPTables, self func() Peer, nodes Nodes) (*Reconciler, error) {
	cfg.Config = cfg.Config.withDefaults()
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if !cfg.ClusterCIDR.IsValid() || !cfg.ClusterCIDR.Addr().Is4() {
		return nil, fmt.Errorf("cluster CIDR %q: want an IPv4 prefix", cfg.ClusterCIDR)
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reconciler{
		cfg: cfg, kernel: kernel, ipt: ipt, self: self, nodes: nodes,
		log:      cfg.Logger.With("component", "nodenet", "mode", string(cfg.Mode)),
		trigger:  make(chan struct{}, 1),
		rulesDue: true,
	}, nil
}

// Trigger asks for a sync soon; it never blocks. Call it on every Node change.
func (r *Reconciler) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Start syncs on every trigger and every resync period until ctx ends, retrying failures with
// backoff. It returns nil when ctx ends. What it installed stays: pods keep their network
// while the kubelet is away.
func (r *Reconciler) Start(ctx context.Context) error {
	r.log.Info("pod network routes", "clusterCIDR", r.cfg.ClusterCIDR.String())
	failures := 0
	for {
		wait := r.cfg.ResyncPeriod
		err := r.Sync(ctx)
		switch {
		case errors.Is(err, errNotSynced):
			wait = unsyncedRetry
		case err != nil:
			failures++
			wait = backoff(failures)
			r.log.Warn("pod network sync failed, will retry", "err", err, "retryIn", wait.Round(time.Millisecond))
		default:
			failures = 0
		}
		t := r.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.trigger:
			t.Stop()
		case <-t.C():
			r.mu.Lock()
			r.rulesDue = true
			r.mu.Unlock()
		}
	}
}

func backoff(failures int) time.Duration {
	d := minRetry
	for i := 1; i < failures && d < maxRetry; i++ {
		d *= 2
	}
	d = min(d, maxRetry)
	return d + rand.N(d/4+1)
}

// Sync makes the kernel match the Nodes once: the iptables rules when due (at the first sync
// and every resync period), then routes and VXLAN entries. It goes on past a failing item and
// returns all failures joined.
func (r *Reconciler) Sync(ctx context.Context) error {
	if !r.nodes.HasSynced() {
		return errNotSynced
	}
	var errs []error
	if err := r.syncRules(); err != nil {
		errs = append(errs, err)
	}
	if err := r.syncRoutes(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *Reconciler) syncRules() error {
	r.mu.Lock()
	due := r.rulesDue
	r.mu.Unlock()
	if !due || r.ipt == nil {
		return nil
	}
	rs := Rules(r.cfg.ClusterCIDR)
	changed, err := ApplyRules(r.ipt, rs)
	if err != nil {
		return err
	}
	r.mu.Lock()
	first := r.lastRules.Chains == nil
	r.rulesDue, r.lastRules = false, rs
	r.mu.Unlock()
	switch {
	case changed && first:
		r.log.Info("iptables rules installed", "forward", ForwardChain, "postrouting", PostroutingChain)
	case changed:
		r.log.Info("iptables rules restored (someone changed them)", "forward", ForwardChain, "postrouting", PostroutingChain)
	}
	return nil
}

func (r *Reconciler) syncRoutes() error {
	self := r.self()
	var peers []Peer
	for _, n := range r.nodes.List() {
		peers = append(peers, PeerOf(n))
	}
	want := Desired(r.cfg.Config, self, peers)
	dev := r.cfg.Device
	var have Plan
	switch {
	case r.cfg.Mode == VXLAN && want.VTEP == nil:
		return fmt.Errorf("vxlan: node %s has no InternalIP to be a tunnel end", self.Name)
	case r.cfg.Mode == VXLAN:
		if err := r.kernel.EnsureVTEP(*want.VTEP); err != nil {
			return err
		}
		neigh, fdb, err := r.kernel.VTEPEntries(dev)
		if err != nil {
			return err
		}
		have.Neighbors, have.FDB = neigh, fdb
	default:
		// Left from a run in VXLAN mode: its routes go with it.
		if err := r.kernel.DeleteVTEP(dev); err != nil {
			r.log.Warn("removing the VXLAN device of an earlier run", "device", dev, "err", err)
		}
	}
	routes, err := r.kernel.Routes()
	if err != nil {
		return err
	}
	have.Routes = routes
	ch := Diff(want, have)
	if ch.Empty() {
		return nil
	}
	var errs []error
	// Entries before the routes that need them; stale routes before the entries they used.
	for _, f := range ch.AddFDB {
		if err := r.kernel.SetFDB(dev, f); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range ch.SetNeighbors {
		if err := r.kernel.SetNeighbor(dev, n); err != nil {
			errs = append(errs, err)
		}
	}
	for _, rt := range ch.ReplaceRoutes {
		if err := r.kernel.ReplaceRoute(rt); err != nil {
			errs = append(errs, err)
			continue
		}
		r.log.Info("route to a node's pods", "route", rt.String())
	}
	for _, rt := range ch.DeleteRoutes {
		if err := r.kernel.DeleteRoute(rt); err != nil {
			errs = append(errs, err)
			continue
		}
		r.log.Info("stale route removed", "route", rt.String())
	}
	for _, n := range ch.DeleteNeighbors {
		if err := r.kernel.DeleteNeighbor(dev, n); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range ch.DeleteFDB {
		if err := r.kernel.DeleteFDB(dev, f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
