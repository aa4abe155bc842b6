package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// Leases is what the elector needs from the API; shared/client's typed client for leases has
// this shape.
type Leases interface {
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// Defaults as the issue asks: renew every 2 s, a lease lasts 15 s.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	requestTimeout       = 5 * time.Second
)

// Config describes one candidate.
type Config struct {
	Leases          Leases
	Namespace, Name string
	// Identity names this candidate in the Lease's holderIdentity; it must be unique.
	Identity      string
	LeaseDuration time.Duration
	RetryPeriod   time.Duration
	// RenewDeadline: a leader that could not renew for this long stops acting as leader,
	// before anyone else may take the lease over.
	RenewDeadline time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
}

// Elector runs one candidate. IsLeader says whether it may act now.
type Elector struct {
	cfg    Config
	log    *slog.Logger
	leader atomic.Bool

	// Only the Start goroutine touches these.
	observedRV   string
	observedTime time.Time
	lastRenew    time.Time
}

// New returns an elector; it does nothing until Start.
func New(cfg Config) *Elector {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Elector{cfg: cfg, log: cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)}
}

// IsLeader reports whether this candidate holds the lease.
func (e *Elector) IsLeader() bool { return e.leader.Load() }

// Start tries to acquire or renew the lease every RetryPeriod until ctx ends, then releases it
// if held, so a successor need not wait out the lease.
func (e *Elector) Start(ctx context.Context) error {
	for {
		e.tick(ctx)
		t := e.cfg.Clock.NewTimer(e.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			e.release()
			return nil
		case <-t.C():
		}
	}
}

// tick is one attempt; it updates IsLeader.
func (e *Elector) tick(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ok, err := e.tryAcquireOrRenew(rctx)
	was := e.leader.Load()
	switch {
	case ok:
		e.lastRenew = e.cfg.Clock.Now()
		if !was {
			e.log.Info("became leader")
		}
		e.leader.Store(true)
	case err != nil && was && e.cfg.Clock.Since(e.lastRenew) < e.cfg.RenewDeadline:
		// A failed renewal inside the deadline keeps the lead: the lease is still ours.
		e.log.Warn("renewing the lease failed", "err", err)
	default:
		if err != nil && ctx.Err() == nil {
			e.log.Debug("lease attempt failed", "err", err)
		}
		if was {
			e.log.Warn("lost leadership")
		}
		e.leader.Store(false)
	}
}

func (e *Elector) tryAcquireOrRenew(ctx context.Context) (bool, error) {
	now := e.cfg.Clock.Now()
	seconds := int32(e.cfg.LeaseDuration / time.Second)
	lease, err := e.cfg.Leases.Get(ctx, e.cfg.Namespace, e.cfg.Name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		id := e.cfg.Identity
		mt := metav1.NewMicroTime(now)
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
	// Expiry is judged by when this process last saw the lease change, not by the renewTime
	// the holder wrote, so clocks that disagree between machines do not matter.
	if lease.ResourceVersion != e.observedRV {
		e.observedRV, e.observedTime = lease.ResourceVersion, now
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	duration := e.cfg.LeaseDuration
	if lease.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	if holder != "" && holder != e.cfg.Identity && now.Before(e.observedTime.Add(duration)) {
		return false, nil
	}
	l := lease.DeepCopy()
	mt := metav1.NewMicroTime(now)
	if holder != e.cfg.Identity {
		transitions := int32(0)
		if l.Spec.LeaseTransitions != nil {
			transitions = *l.Spec.LeaseTransitions
		}
		if holder != "" {
			transitions++
		}
		l.Spec.LeaseTransitions = &transitions
		l.Spec.AcquireTime = &mt
		id := e.cfg.Identity
		l.Spec.HolderIdentity = &id
	}
	l.Spec.RenewTime = &mt
	l.Spec.LeaseDurationSeconds = &seconds
	updated, err := e.cfg.Leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		// A conflict means someone else wrote first: not ours this round.
		return false, fmt.Errorf("update lease: %w", err)
	}
	e.observedRV, e.observedTime = updated.ResourceVersion, now
	return true, nil
}

// release gives the lease up by clearing its holder.
func (e *Elector) release() {
	if !e.leader.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	lease, err := e.cfg.Leases.Get(ctx, e.cfg.Namespace, e.cfg.Name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != e.cfg.Identity {
		return
	}
	l := lease.DeepCopy()
	empty := ""
	one := int32(1)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &empty, &one
	if _, err := e.cfg.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		e.log.Warn("releasing the lease", "err", err)
		return
	}
	e.log.Info("released the lease")
}
