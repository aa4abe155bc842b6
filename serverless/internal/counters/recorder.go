package counters

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// Recorder is a gateway's side: calls are tallied in memory on the hot path and sealed
// buckets are written to the Store in the background every FlushInterval, so a call costs no
// round trip to the store.
type Recorder struct {
	store    Store
	interval time.Duration
	clock    clock.Clock
	log      *slog.Logger
	tally    Tally

	mu      sync.Mutex
	pending Batch // sealed but not yet written (the store failed)
}

// RecorderConfig tunes a Recorder.
type RecorderConfig struct {
	// FlushInterval is how often sealed buckets are written (default 250 ms).
	FlushInterval time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
}

// NewRecorder returns a recorder writing to store. It does no I/O.
func NewRecorder(store Store, cfg RecorderConfig) *Recorder {
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 250 * time.Millisecond
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Recorder{store: store, interval: cfg.FlushInterval, clock: cfg.Clock, log: cfg.Logger}
}

// Begin records that a call of fn ("namespace/name") begins now; call the returned function
// when it ends.
func (r *Recorder) Begin(fn string) (end func()) {
	r.tally.Begin(fn, r.clock.Now())
	return func() { r.tally.End(fn, r.clock.Now()) }
}

// InFlight is the number of calls of fn this recorder has in flight.
func (r *Recorder) InFlight(fn string) int { return r.tally.InFlight(fn) }

// Start writes sealed buckets every FlushInterval until ctx ends, then writes everything
// left, the current second's partial bucket included. It returns nil.
func (r *Recorder) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Flush(fctx, true); err != nil {
				r.log.Warn("write the last call counters", "err", err)
			}
			return nil
		case <-r.clock.After(r.interval):
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := r.Flush(fctx, false); err != nil {
				r.log.Warn("write call counters", "err", err)
			}
			cancel()
		}
	}
}

// Flush seals what is complete (everything with all) and writes it with whatever an earlier
// failed flush left; on failure it keeps the batch for the next flush.
func (r *Recorder) Flush(ctx context.Context, all bool) error {
	b := r.tally.Seal(r.clock.Now(), all)
	r.mu.Lock()
	defer r.mu.Unlock()
	b = merge(r.pending, b)
	r.pending = Batch{}
	if b.Empty() {
		return nil
	}
	if err := r.store.Add(ctx, b); err != nil {
		r.pending = b
		return err
	}
	return nil
}

// maxPending bounds the seconds of one function kept while the store fails (the longest
// stable window).
const maxPending = 3600

// merge adds b to a (either may be empty), keeping the later last call.
func merge(a, b Batch) Batch {
	if a.Empty() {
		return b
	}
	for fn, bs := range b.Buckets {
		all := append(a.Buckets[fn], bs...)
		if len(all) > maxPending {
			// The store has been failing for long: the oldest seconds are past any window.
			all = all[len(all)-maxPending:]
		}
		a.Buckets[fn] = all
	}
	for fn, t := range b.LastCalls {
		if t.After(a.LastCalls[fn]) {
			a.LastCalls[fn] = t
		}
	}
	return a
}
