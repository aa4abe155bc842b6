package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// Defaults, as kube-controller-manager's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ErrLostLeadership is returned by Run when the lease could not be renewed in time. The
// process should exit: its caches and queues may hold decisions a new leader now owns.
var ErrLostLeadership = errors.New("leader election lost")

// API reads and writes the Lease.
type API interface {
	Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// Config names the Lease and this candidate.
type Config struct {
	Namespace, Name string
	// Identity must differ between candidates, e.g. hostname plus a random suffix.
	Identity string
	// LeaseDuration is how long others wait after the last renewal before taking over;
	// RenewDeadline is how long the leader keeps trying to renew before giving up, and must
	// be shorter, so a leader stops acting before anyone else can start; RetryPeriod is the
	// pace of attempts.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	API                                       API
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
	case c.Namespace == "" || c.Name == "" || c.Identity == "":
		return errors.New("leader election needs a lease namespace, name and identity")
	case c.RenewDeadline >= c.LeaseDuration:
		return fmt.Errorf("leader election: renew deadline %s must be shorter than the lease duration %s", c.RenewDeadline, c.LeaseDuration)
	case c.RetryPeriod >= c.RenewDeadline:
		return fmt.Errorf("leader election: retry period %s must be shorter than the renew deadline %s", c.RetryPeriod, c.RenewDeadline)
	}
	return nil
}

// CanAcquire says whether identity may take or renew lease at now: it holds it already, no
// one does, or the holder let it expire.
func CanAcquire(lease *coordinationv1.Lease, identity string, now time.Time) bool {
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || holder == identity {
		return true
	}
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return true
	}
	expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	return !now.Before(expires)
}

// Run campaigns for the Lease and runs lead while holding it. It returns nil when ctx ends
// (releasing the Lease so a successor need not wait), ErrLostLeadership when renewing failed
// for RenewDeadline, or what lead returned.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	for {
		ok, err := tryAcquire(ctx, cfg)
		if ok {
			break
		}
		if err != nil && ctx.Err() == nil {
			log.Debug("acquiring the lease", "err", err)
		}
		if !sleep(ctx, cfg.Clock, cfg.RetryPeriod) {
			return nil
		}
	}
	log.Info("became leader")
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- lead(leadCtx) }()

	lastRenew := cfg.Clock.Now()
	for {
		t := cfg.Clock.NewTimer(cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			cancel()
			err := <-done
			release(cfg, log)
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case err := <-done:
			t.Stop()
			release(cfg, log)
			return err
		case <-t.C():
		}
		ok, err := tryAcquire(ctx, cfg)
		if ok {
			lastRenew = cfg.Clock.Now()
			continue
		}
		if cfg.Clock.Since(lastRenew) >= cfg.RenewDeadline {
			log.Error("lost leadership", "err", err)
			cancel()
			<-done
			return ErrLostLeadership
		}
	}
}

// tryAcquire creates, takes over or renews the Lease, once.
func tryAcquire(ctx context.Context, cfg Config) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RetryPeriod)
	defer cancel()
	now := metav1.NewMicroTime(cfg.Clock.Now())
	secs := int32(cfg.LeaseDuration / time.Second)
	id := cfg.Identity
	lease, err := cfg.API.Get(ctx, cfg.Namespace, cfg.Name)
	if errors.Is(err, apierror.ErrNotFound) {
		_, err := cfg.API.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs,
				AcquireTime: &now, RenewTime: &now},
		})
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	if !CanAcquire(lease, id, now.Time) {
		return false, nil
	}
	next := lease.DeepCopy()
	if next.Spec.HolderIdentity == nil || *next.Spec.HolderIdentity != id {
		transitions := int32(0)
		if next.Spec.LeaseTransitions != nil {
			transitions = *next.Spec.LeaseTransitions + 1
		}
		next.Spec.HolderIdentity, next.Spec.AcquireTime, next.Spec.LeaseTransitions = &id, &now, &transitions
	}
	next.Spec.RenewTime, next.Spec.LeaseDurationSeconds = &now, &secs
	// The resourceVersion read above makes two candidates' takeovers conflict, not both win.
	_, err = cfg.API.Update(ctx, next)
	return err == nil, err
}

// release gives the Lease up at shutdown, so a successor takes over at once.
func release(cfg Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RetryPeriod)
	defer cancel()
	lease, err := cfg.API.Get(ctx, cfg.Namespace, cfg.Name)
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != cfg.Identity {
		return
	}
	next := lease.DeepCopy()
	empty := ""
	next.Spec.HolderIdentity = &empty
	if _, err := cfg.API.Update(ctx, next); err != nil {
		log.Warn("releasing the lease", "err", err)
		return
	}
	log.Info("released the lease")
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
