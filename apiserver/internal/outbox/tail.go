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
// pending counts events published since the last offer to the storer.
type progress struct {
	published int64
	pending   int
	store     *storer
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
		// Nothing under the prefix changed up to this revision.
		p.published = max(p.published, resp.Header.Revision)
		o.metrics.lag.Set(0)
		return nil
	}
	if len(resp.Events) == 0 {
		return nil
	}
	received := time.Now()
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
	for start := 0; start < len(msgs); start += o.cfg.MaxBatch {
		batch := msgs[start:min(start+o.cfg.MaxBatch, len(msgs))]
		if err := o.cfg.Publisher.Publish(ctx, batch...); err != nil {
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
