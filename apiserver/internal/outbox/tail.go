package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"minik8s.io/shared/bus"
)

// errLostLeadership means the fenced write of the revision failed: someone
// else leads now, and this process must stop publishing.
var errLostLeadership = errors.New("outbox: no longer the leader")

// errRewatch restarts the watch at once, without backoff.
var errRewatch = errors.New("outbox: rewatch")

// progress is the leader's position: published is confirmed by the broker;
// pending counts events published since the last offer to the storer; flight holds the
// batches sent but not yet confirmed, when the publisher pipelines.
type progress struct {
	published int64
	pending   int
	store     *storer
	flight    *flight
}

// lead publishes while this process holds the election.
func (o *Outbox) lead(ctx context.Context, el *concurrency.Election) error {
	// Every revision write is conditional on still owning the election key,
	// so a deposed leader can never move the stored revision.
	fence := clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())
	stored, err := o.Revision(ctx)
	if err != nil {
		return err
	}
	o.metrics.revision.Set(float64(stored))
	st := newStorer()
	storeDone := make(chan struct{})
	go func() {
		defer close(storeDone)
		// Not cancelled with ctx: the final offer below must still be written.
		o.storeLoop(context.WithoutCancel(ctx), fence, stored, st)
	}()
	defer func() {
		close(st.revs)
		<-storeDone
	}()

	p := &progress{published: stored, store: st}
	o.log.Info("outbox resuming", "fromRevision", stored+1)
	for attempt := 0; ; attempt++ {
		before := p.published
		err := o.tail(ctx, p)
		if ctx.Err() != nil {
			// Store what was confirmed, so a successor republishes as little
			// as possible.
			st.offer(p.published)
			return nil
		}
		if errors.Is(err, errLostLeadership) {
			return err
		}
		if errors.Is(err, errRewatch) {
			continue
		}
		if p.published > before {
			attempt = 0
		}
		delay := o.cfg.Retry.Delay(attempt)
		o.log.Warn("outbox tail interrupted, resuming from last confirmed revision",
			"err", err, "fromRevision", p.published+1, "retryIn", delay)
		if bus.Sleep(ctx, delay) != nil {
			st.offer(p.published)
			return nil
		}
	}
}

// tail watches from p.published+1 and publishes until an error. Any error
// leaves p consistent: published covers only confirmed responses.
func (o *Outbox) tail(ctx context.Context, p *progress) error {
	if pl, ok := o.cfg.Publisher.(bus.Pipeliner); ok {
		// Publish with nothing (re)connects; after it, Send may pipeline.
		if err := pl.Publish(ctx); err != nil {
			o.metrics.errors.Inc()
			return fmt.Errorf("publish: %w", err)
		}
		p.flight = newFlight(ctx, pl, o.cfg.Window)
		defer func() {
			p.flight.stop()
			p.flight = nil
		}()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := o.cfg.Client.Watch(wctx, o.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(p.published+1),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	ticker := time.NewTicker(o.cfg.AdvanceInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-p.store.errc:
			return err
		case <-ticker.C:
			p.advance()
		case b := <-p.flight.acks():
			o.confirmed(p, b)
		case err := <-p.flight.failures():
			o.metrics.errors.Inc()
			return fmt.Errorf("publish: %w", err)
		case resp, ok := <-wch:
			if !ok {
				return errors.New("watch channel closed")
			}
			// Changes that arrived while the last batch waited for its confirm go out
			// together: one confirm round trip per batch keeps up with any rate the
			// broker can take, instead of one per watch response.
			for resp.Err() == nil && !resp.IsProgressNotify() && resp.CompactRevision == 0 && len(resp.Events) < o.cfg.MaxBatch {
				next, more := pending(wch)
				if !more {
					break
				}
				if next.Err() != nil || next.IsProgressNotify() || next.CompactRevision != 0 || len(next.Events) == 0 {
					if err := o.handle(ctx, p, resp); err != nil {
						return err
					}
					resp = next
					break
				}
				resp.Events = append(resp.Events, next.Events...)
				resp.Header = next.Header
			}
			if err := o.handle(ctx, p, resp); err != nil {
				return err
			}
		}
	}
}

func (o *Outbox) handle(ctx context.Context, p *progress, resp clientv3.WatchResponse) error {
	if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
		// The changes between what we published and the compaction point are
		// gone; consumers' periodic relists repair what they missed. Go on
		// from the oldest revision etcd still has.
		o.metrics.compacted.Inc()
		o.log.Error("OUTBOX LOST CHANGES: revisions needed for replay were compacted",
			"lostFrom", p.published+1, "lostTo", resp.CompactRevision-1, "resumeAt", resp.CompactRevision)
		p.published = max(p.published, resp.CompactRevision-1)
		p.advance()
		return errRewatch
	}
	if err := resp.Err(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if resp.IsProgressNotify() {
		// Nothing under the prefix changed up to this revision; behind any batches still
		// in flight, so it takes effect in order.
		if p.flight != nil {
			return o.fly(ctx, p, batch{rev: resp.Header.Revision})
		}
		p.published = max(p.published, resp.Header.Revision)
		o.metrics.lag.Set(0)
		return nil
	}
	if len(resp.Events) == 0 {
		return nil
	}
	received := time.Now()
	var err error
	msgs := make([]bus.Message, 0, len(resp.Events))
	for _, ev := range resp.Events {
		m, err := toMessage(o.cfg.Prefix, ev)
		if err != nil {
			o.metrics.skipped.Inc()
			o.log.Warn("outbox skipping change it cannot publish", "key", string(ev.Kv.Key), "err", err)
			continue
		}
		msgs = append(msgs, m)
	}
	last := resp.Events[len(resp.Events)-1].Kv.ModRevision
	if p.flight != nil {
		for start := 0; start < len(msgs); start += o.cfg.MaxBatch {
			end := min(start+o.cfg.MaxBatch, len(msgs))
			b := batch{n: end - start, received: received, head: resp.Header.Revision}
			if end == len(msgs) {
				// Only the end of a response is a whole revision.
				b.rev = last
			}
			if b.wait, err = p.flight.pl.Send(ctx, msgs[start:end]...); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			if err := o.fly(ctx, p, b); err != nil {
				return err
			}
		}
		if len(msgs) == 0 {
			return o.fly(ctx, p, batch{rev: last, head: resp.Header.Revision})
		}
		return nil
	}
	for start := 0; start < len(msgs); start += o.cfg.MaxBatch {
		batch := msgs[start:min(start+o.cfg.MaxBatch, len(msgs))]
		if err = o.cfg.Publisher.Publish(ctx, batch...); err != nil {
			o.metrics.errors.Inc()
			return fmt.Errorf("publish: %w", err)
		}
		took := time.Since(received).Seconds()
		for range batch {
			o.metrics.latency.Observe(took)
		}
		o.metrics.published.Add(float64(len(batch)))
	}
	// A revision's events never span two responses, so the whole response
	// being confirmed means every revision up to the last one is.
	p.published = resp.Events[len(resp.Events)-1].Kv.ModRevision
	p.pending += len(resp.Events)
	o.metrics.lag.Set(float64(max(resp.Header.Revision-p.published, 0)))
	if p.pending >= o.cfg.AdvanceEvery {
		p.advance()
	}
	return nil
}

// advance hands the published revision to the storer.
func (p *progress) advance() {
	if p.published > p.store.offered {
		p.store.offer(p.published)
		p.pending = 0
	}
}

// storer writes the published revision to etcd off the publishing path, so
// an etcd write (an fsync) never delays a publish. Offers coalesce: only the
// latest revision waits to be written.
type storer struct {
	revs    chan int64
	errc    chan error
	offered int64 // last offer; touched only by the publishing goroutine
}

func newStorer() *storer {
	return &storer{revs: make(chan int64, 1), errc: make(chan error, 1)}
}

// offer replaces any waiting revision with rev. Only one goroutine offers, so
// after the drain the send cannot block.
func (s *storer) offer(rev int64) {
	select {
	case <-s.revs:
	default:
	}
	s.revs <- rev
	s.offered = rev
}

// storeLoop writes offered revisions until s.revs is closed. Losing the fence
// is reported on s.errc and ends the loop; other failures are retried a few
// times, then left to the next offer (a stale stored revision only costs
// duplicates after a restart).
func (o *Outbox) storeLoop(ctx context.Context, fence clientv3.Cmp, stored int64, s *storer) {
	for rev := range s.revs {
		if rev <= stored {
			continue
		}
		var err error
		for attempt := range 3 {
			if err = o.storeRevision(ctx, fence, rev); err == nil || errors.Is(err, errLostLeadership) {
				break
			}
			_ = bus.Sleep(ctx, o.cfg.Retry.Delay(attempt))
		}
		if errors.Is(err, errLostLeadership) {
			s.errc <- err
			for range s.revs { // drain until lead closes
			}
			return
		}
		if err != nil {
			o.log.Warn("outbox revision store failed", "revision", rev, "err", err)
			continue
		}
		stored = rev
		o.metrics.revision.Set(float64(stored))
	}
}

// storeRevision writes rev, fenced on leadership.
func (o *Outbox) storeRevision(ctx context.Context, fence clientv3.Cmp, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := o.cfg.Client.Txn(ctx).If(fence).
		Then(clientv3.OpPut(o.cfg.RevisionKey, strconv.FormatInt(rev, 10))).Commit()
	if err != nil {
		return fmt.Errorf("store outbox revision: %w", err)
	}
	if !resp.Succeeded {
		return errLostLeadership
	}
	return nil
}

// pending returns a watch response that is already waiting, without blocking.
func pending(wch clientv3.WatchChan) (clientv3.WatchResponse, bool) {
	select {
	case r, ok := <-wch:
		return r, ok
	default:
		return clientv3.WatchResponse{}, false
	}
}

// batch is one Send whose confirms are awaited in order. rev is the revision it completes
// (0 when a response's events continue in the next batch); head the watch's revision then.
type batch struct {
	n        int
	rev      int64
	head     int64
	received time.Time
	wait     func(context.Context) error
}

// flight awaits the confirms of sent batches, in send order, on its own goroutine, so the
// tail keeps sending while the broker confirms.
type flight struct {
	pl     bus.Pipeliner
	in     chan batch
	done   chan batch
	failed chan error
	cancel context.CancelFunc
	exited chan struct{}
}

func newFlight(ctx context.Context, pl bus.Pipeliner, window int) *flight {
	ctx, cancel := context.WithCancel(ctx)
	f := &flight{pl: pl, in: make(chan batch, window), done: make(chan batch, window),
		failed: make(chan error, 1), cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(f.exited)
		for {
			var b batch
			select {
			case <-ctx.Done():
				return
			case b = <-f.in:
			}
			if b.wait != nil {
				if err := b.wait(ctx); err != nil {
					f.failed <- err
					return
				}
			}
			select {
			case f.done <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return f
}

// acks and failures are nil channels (never ready) without a flight.
func (f *flight) acks() <-chan batch {
	if f == nil {
		return nil
	}
	return f.done
}

func (f *flight) failures() <-chan error {
	if f == nil {
		return nil
	}
	return f.failed
}

// stop abandons what is still in flight: its changes are republished from the last
// confirmed revision.
func (f *flight) stop() {
	f.cancel()
	<-f.exited
}

// fly queues b behind the batches in flight, applying confirms while the window is full.
func (o *Outbox) fly(ctx context.Context, p *progress, b batch) error {
	for {
		select {
		case p.flight.in <- b:
			return nil
		case a := <-p.flight.done:
			o.confirmed(p, a)
		case err := <-p.flight.failed:
			o.metrics.errors.Inc()
			return fmt.Errorf("publish: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// confirmed records a batch the broker confirmed.
func (o *Outbox) confirmed(p *progress, b batch) {
	if b.n > 0 {
		took := time.Since(b.received).Seconds()
		for range b.n {
			o.metrics.latency.Observe(took)
		}
		o.metrics.published.Add(float64(b.n))
	}
	if b.rev > p.published {
		p.published = b.rev
	}
	p.pending += b.n
	o.metrics.lag.Set(float64(max(b.head-p.published, 0)))
	if p.pending >= o.cfg.AdvanceEvery {
		p.advance()
	}
}
