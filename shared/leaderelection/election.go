package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// Defaults, as kube-scheduler's and kube-controller-manager's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ErrLostLeadership is returned by Run when the lease could not be renewed within the
// RenewDeadline, or another candidate holds it. The process should exit: its caches and queues
// may hold decisions a new leader now owns.
var ErrLostLeadership = errors.New("leader election lost")

// Leases reads and writes the Lease. shared/client's
// client.Typed[*coordinationv1.Lease, *coordinationv1.LeaseList] has this shape.
type Leases interface {
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// Config names the Lease and this candidate.
type Config struct {
	Leases          Leases
	Namespace, Name string
	// Identity is this candidate's holderIdentity; it must differ between candidates, e.g.
	// hostname plus a pid or random suffix.
	Identity string
	// LeaseDuration is how long others wait after they last saw the Lease change before
	// taking it over. RenewDeadline is how long the leader keeps trying to renew before it
	// stops leading; it must be shorter, so the leader stops before anyone else can start.
	// RetryPeriod is the pace of attempts. Zero means the default.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Clock                                     clock.Clock
	Logger                                    *slog.Logger
}

// Validate fills defaults and checks the timings.
func (c *Config) Validate() error {
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline <= 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Leases == nil:
		return errors.New("leader election needs a Leases client")
	case c.Namespace == "" || c.Name == "" || c.Identity == "":
		return errors.New("leader election needs a lease namespace, name and identity")
	case c.LeaseDuration < time.Second:
		// The Lease stores whole seconds.
		return fmt.Errorf("leader election: lease duration %s must be at least 1s", c.LeaseDuration)
	case c.RenewDeadline >= c.LeaseDuration:
		return fmt.Errorf("leader election: renew deadline %s must be shorter than the lease duration %s", c.RenewDeadline, c.LeaseDuration)
	case c.RetryPeriod >= c.RenewDeadline:
		return fmt.Errorf("leader election: retry period %s must be shorter than the renew deadline %s", c.RetryPeriod, c.RenewDeadline)
	}
	return nil
}

// Elector is one candidate. Use it one of two ways, once:
//   - Start campaigns for as long as its ctx lives; leadership may come and go, and IsLeader
//     says whether the process may act now (the scheduler polls it).
//   - Run campaigns until it wins, then runs a function for one term and returns when the term
//     ends (the controller-manager runs its controllers this way).
//
// Both release the Lease when ctx ends, so a successor need not wait out the lease.
type Elector struct {
	cfg Config
	log *slog.Logger

	leader atomic.Bool
	// leadUntil is lastRenew+RenewDeadline in UnixNano: IsLeader turns false at that moment
	// even if the loop is stuck in a slow request.
	leadUntil atomic.Int64

	// Only the goroutine in Start or Run touches these.
	observedRV   string
	observedTime time.Time
	lastRenew    time.Time
}

// New checks cfg and returns an elector; it does nothing until Start or Run.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Elector{cfg: cfg, log: cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)}, nil
}

// IsLeader reports whether this candidate holds the lease and renewed it within RenewDeadline.
func (e *Elector) IsLeader() bool {
	return e.leader.Load() && e.cfg.Clock.Now().UnixNano() < e.leadUntil.Load()
}

// Start tries to acquire or renew the lease every RetryPeriod until ctx ends, then releases it
// if held. It always returns nil; it is a run.Runnable.
func (e *Elector) Start(ctx context.Context) error {
	for {
		e.attempt(ctx)
		if !sleep(ctx, e.cfg.Clock, e.wait()) {
			e.release(ctx)
			return nil
		}
	}
}

// Run waits until this candidate holds the lease, then calls lead with a context that is
// cancelled when the term ends. It returns nil when ctx ends (after lead returns and the lease
// is released), ErrLostLeadership when the lease was lost, or what lead returned if it returned
// first.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context) error) error {
	for !e.attempt(ctx) {
		if !sleep(ctx, e.cfg.Clock, e.wait()) {
			return nil
		}
	}
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- lead(leadCtx) }()
	var err error
	for {
		t := e.cfg.Clock.NewTimer(e.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			cancel()
			err = <-done
		case err = <-done:
		case <-t.C():
			if !e.attempt(ctx) {
				cancel()
				<-done
				return ErrLostLeadership
			}
			continue
		}
		t.Stop()
		break
	}
	e.release(ctx)
	// lead may notice ctx ending before this loop does; either way that is a clean stop.
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// wait is the pause before the next attempt. A leader renews on the beat; candidates add
// jitter so they do not all hit the apiserver at once.
func (e *Elector) wait() time.Duration {
	if e.leader.Load() {
		return e.cfg.RetryPeriod
	}
	return e.cfg.RetryPeriod + rand.N(e.cfg.RetryPeriod/5+1)
}

// attempt makes one try to acquire or renew the lease and updates IsLeader; it returns whether
// this candidate leads afterwards.
func (e *Elector) attempt(ctx context.Context) bool {
	was := e.leader.Load()
	timeout := e.cfg.RetryPeriod
	if was {
		// A renewal must not outlast the deadline: past it we are no longer the leader.
		left := e.cfg.RenewDeadline - e.cfg.Clock.Since(e.lastRenew)
		if left <= 0 {
			e.stepDown("renew deadline passed")
			return false
		}
		timeout = min(timeout, left)
	}
	now := e.cfg.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ok, err := e.tryAcquireOrRenew(rctx, now)
	switch {
	case ok:
		e.lastRenew = now
		e.leadUntil.Store(now.Add(e.cfg.RenewDeadline).UnixNano())
		if !e.leader.Swap(true) {
			e.log.Info("became leader")
		}
		return true
	case err != nil && was && e.cfg.Clock.Since(e.lastRenew) < e.cfg.RenewDeadline:
		// The lease is still ours until the deadline; the next attempt may get through.
		e.log.Warn("renewing the lease failed", "err", err)
		return true
	case was:
		if err == nil {
			e.stepDown("another candidate holds the lease")
		} else {
			e.stepDown(err.Error())
		}
		return false
	default:
		if err != nil && ctx.Err() == nil {
			e.log.Debug("acquiring the lease failed", "err", err)
		}
		return false
	}
}

func (e *Elector) stepDown(why string) {
	if e.leader.Swap(false) {
		e.log.Warn("lost leadership", "reason", why)
	}
}

// tryAcquireOrRenew creates, takes over or renews the Lease, once. It returns false with a nil
// error when another candidate holds an unexpired lease.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, now time.Time) (bool, error) {
	mt := metav1.NewMicroTime(now)
	seconds := int32(e.cfg.LeaseDuration / time.Second)
	id := e.cfg.Identity
	lease, err := e.cfg.Leases.Get(ctx, e.cfg.Namespace, e.cfg.Name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		created, err := e.cfg.Leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &seconds,
				AcquireTime: &mt, RenewTime: &mt, LeaseTransitions: new(int32)},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("create lease: %w", err)
		}
		e.observedRV, e.observedTime = created.ResourceVersion, now
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get lease: %w", err)
	}
	// Expiry is judged by when this process last saw the Lease change, not by the renewTime
	// the holder wrote, so clocks that disagree between machines do not matter.
	if lease.ResourceVersion != e.observedRV {
		e.observedRV, e.observedTime = lease.ResourceVersion, now
	}
	if !canTake(lease.Spec, id, e.observedTime, now, e.cfg.LeaseDuration) {
		return false, nil
	}
	next := lease.DeepCopy()
	if holder(lease.Spec) != id {
		// Every change of holder counts, a takeover after a release too, as in Kubernetes.
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions + 1
		}
		next.Spec.HolderIdentity, next.Spec.AcquireTime, next.Spec.LeaseTransitions = &id, &mt, &transitions
	}
	next.Spec.RenewTime, next.Spec.LeaseDurationSeconds = &mt, &seconds
	// The resourceVersion read above makes two candidates' takeovers conflict, not both win.
	updated, err := e.cfg.Leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("update lease: %w", err)
	}
	e.observedRV, e.observedTime = updated.ResourceVersion, now
	return true, nil
}

// canTake says whether identity may take or renew a lease with spec at now, having last seen
// it change at observed: it holds it already, no one does, or the holder let it expire.
// fallback is the duration assumed when the lease states none.
func canTake(spec coordinationv1.LeaseSpec, identity string, observed, now time.Time, fallback time.Duration) bool {
	h := holder(spec)
	if h == "" || h == identity {
		return true
	}
	d := fallback
	if spec.LeaseDurationSeconds != nil {
		d = time.Duration(*spec.LeaseDurationSeconds) * time.Second
	}
	return !now.Before(observed.Add(d))
}

func holder(spec coordinationv1.LeaseSpec) string {
	if spec.HolderIdentity == nil {
		return ""
	}
	return *spec.HolderIdentity
}

// release gives the lease up by clearing its holder, if this candidate leads. It keeps
// leaseTransitions, and shortens the duration so that old readers do not wait either.
func (e *Elector) release(ctx context.Context) {
	if !e.leader.Swap(false) {
		return
	}
	// ctx has ended; the release still gets a bounded moment of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	lease, err := e.cfg.Leases.Get(ctx, e.cfg.Namespace, e.cfg.Name, metav1.GetOptions{})
	if err != nil {
		e.log.Warn("releasing the lease", "err", err)
		return
	}
	if holder(lease.Spec) != e.cfg.Identity {
		return
	}
	next := lease.DeepCopy()
	empty, one := "", int32(1)
	now := metav1.NewMicroTime(e.cfg.Clock.Now())
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds = &empty, &one
	next.Spec.AcquireTime, next.Spec.RenewTime = &now, &now
	if _, err := e.cfg.Leases.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		e.log.Warn("releasing the lease", "err", err)
		return
	}
	e.log.Info("released the lease")
}

// sleep waits d; it returns false when ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
