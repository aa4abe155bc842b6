package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/workqueue"
	"minik8s.io/shared/workqueue/clock"
)

// Requeue asks the loop to look at a key again after After, without counting a failure: what
// a sync returns when it waits for its own writes to reach the cache.
type Requeue struct{ After time.Duration }

func (r Requeue) Error() string { return "requeue after " + r.After.String() }

// Loop runs Sync over queued keys. Build it with New; Queue is where handlers add keys.
type Loop struct {
	// Name labels log lines ("endpoints").
	Name string
	// Workers is how many keys are reconciled at once; a key is never on two workers.
	Workers int
	// Sync reconciles one key; a nil error forgets the key's failures.
	Sync func(ctx context.Context, key string) error
	// Keys lists every key to revisit each Resync (e.g. every Service in the cache).
	Keys   func() []string
	Resync time.Duration
	// Resynced, if set, runs after Keys are queued each resync, for keys no cache lists (the
	// function controller queues there the deleted functions that left images behind).
	Resynced func(ctx context.Context)
	// Synced are the informers' HasSynced: nothing is reconciled before they all are.
	Synced []func() bool
	Logger *slog.Logger

	Queue   *workqueue.Queue[string]
	clock   clock.Clock
	metrics *metrics.Controller
}

// New returns a loop with its queue, both reporting to the registry of SetMetrics; fill in the
// rest before Run.
func New(name string, clk clock.Clock) *Loop { return NewIn(registry.Load(), name, clk) }

// NewIn is New reporting to reg rather than to the registry of SetMetrics: for a component
// that passes its registry around instead (serverless); nil reports nowhere.
func NewIn(reg *metrics.Registry, name string, clk clock.Clock) *Loop {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Loop{Name: name, Workers: 2, Resync: time.Minute, clock: clk,
		Queue:   workqueue.New(workqueue.Config[string]{Clock: clk, Metrics: reg.Queue(name)}),
		metrics: reg.Controller(name)}
}

// Tune sets Workers and Resync to the values a controller was configured with; zero keeps
// the default.
func (l *Loop) Tune(workers int, resync time.Duration) {
	if workers > 0 {
		l.Workers = workers
	}
	if resync > 0 {
		l.Resync = resync
	}
}

// Add queues key.
func (l *Loop) Add(key string) { l.Queue.Add(key) }

// Run waits for the caches, then reconciles until ctx ends; it drains its workers before
// returning.
func (l *Loop) Run(ctx context.Context) error {
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("controller", l.Name)
	if !informer.WaitForSync(ctx, l.Synced...) {
		l.Queue.ShutDown()
		return nil
	}
	log.Info("started", "workers", l.Workers, "resync", l.Resync)
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l.next(ctx, log) {
			}
		}()
	}
	for {
		for _, k := range l.Keys() {
			l.Queue.Add(k)
		}
		if l.Resynced != nil {
			l.Resynced(ctx)
		}
		t := l.clock.NewTimer(l.Resync)
		select {
		case <-ctx.Done():
			t.Stop()
			l.Queue.ShutDown()
			wg.Wait()
			return nil
		case <-t.C():
		}
	}
}

func (l *Loop) next(ctx context.Context, log *slog.Logger) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	defer l.Queue.Done(key)
	start := l.clock.Now()
	err := l.Sync(ctx, key)
	took := l.clock.Since(start)
	var rq Requeue
	switch {
	case err == nil:
		l.metrics.Observe(took, metrics.ResultSuccess)
		l.Queue.Forget(key)
	case errors.As(err, &rq):
		// As controller-runtime's RequeueAfter: the sync succeeded, so its failures are
		// forgotten, and the key comes back when asked.
		l.metrics.Observe(took, metrics.ResultRequeue)
		l.Queue.Forget(key)
		l.Queue.AddAfter(key, rq.After)
	default:
		l.metrics.Observe(took, metrics.ResultError)
		if ctx.Err() == nil {
			log.Warn("sync failed, requeueing", "key", key, "err", err)
		}
		l.Queue.AddRateLimited(key)
	}
	return true
}
