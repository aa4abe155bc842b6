package membus

import (
	"context"
	"log/slog"
	"sync"

	"minik8s.io/shared/bus"
)

// Bus is an in-memory broker. The zero value is not usable; call New.
type Bus struct {
	log *slog.Logger

	mu         sync.Mutex
	queues     map[string]*queue
	publishErr error
	// gen is the connection generation: Disconnect bumps it, and every
	// consumer that sees a new generation "reconnects".
	gen int
	// changed is closed and replaced on every change that a waiting consumer
	// may care about, a broadcast that, unlike sync.Cond, composes with ctx.
	changed chan struct{}
	seq     uint64
}

type queue struct {
	bindings map[string]struct{}
	items    []item
}

type item struct {
	msg         bus.Message
	seq         uint64
	redelivered bool
}

var (
	_ bus.Pipeliner = (*Bus)(nil)
	_ bus.Consumer  = (*Bus)(nil)
)

// New returns an empty bus. logger may be nil.
func New(logger *slog.Logger) *Bus {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Bus{log: logger, queues: map[string]*queue{}, changed: make(chan struct{})}
}

// Publish routes each message to every queue with a matching binding. Messages
// that match no binding are dropped, as with a non-mandatory AMQP publish.
func (b *Bus) Publish(ctx context.Context, msgs ...bus.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.publishErr != nil {
		return b.publishErr
	}
	for _, m := range msgs {
		b.seq++
		for _, q := range b.queues {
			for p := range q.bindings {
				if bus.Match(p, m.RoutingKey) {
					q.items = append(q.items, item{msg: m, seq: b.seq})
					break
				}
			}
		}
	}
	b.notifyLocked()
	return nil
}

// Send implements bus.Pipeliner: delivery is immediate, so the wait reports nothing more.
func (b *Bus) Send(ctx context.Context, msgs ...bus.Message) (func(context.Context) error, error) {
	if err := b.Publish(ctx, msgs...); err != nil {
		return nil, err
	}
	return func(context.Context) error { return nil }, nil
}

// FailPublish makes every Publish return err until called again with nil,
// standing in for an unreachable broker.
func (b *Bus) FailPublish(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publishErr = err
}

// Disconnect simulates the broker closing every connection: each running
// Consume requeues its unacknowledged delivery, calls OnConnect again and
// resumes.
func (b *Bus) Disconnect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	b.notifyLocked()
}

// Len returns the number of messages waiting in queue (0 if it does not exist).
func (b *Bus) Len(queue string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q, ok := b.queues[queue]; ok {
		return len(q.items)
	}
	return 0
}

func (b *Bus) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Consume implements bus.Consumer.
func (b *Bus) Consume(ctx context.Context, sub bus.Subscription) error {
	if err := sub.Validate(); err != nil {
		return err
	}
	attempts := map[uint64]int{}
	for failures := 0; ; {
		gen := b.declare(sub)
		if sub.OnConnect != nil {
			if err := sub.OnConnect(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				b.log.Warn("bus on-connect hook failed", "queue", sub.Queue, "err", err)
				if bus.Sleep(ctx, sub.Retry.Delay(failures)) != nil {
					return nil
				}
				failures++
				continue
			}
		}
		failures = 0
		b.serve(ctx, sub, gen, attempts)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// declare creates the queue if needed, adds the bindings and returns the
// connection generation the session belongs to.
func (b *Bus) declare(sub bus.Subscription) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.queues[sub.Queue]
	if !ok {
		q = &queue{bindings: map[string]struct{}{}}
		b.queues[sub.Queue] = q
	}
	for _, p := range sub.Bindings {
		q.bindings[p] = struct{}{}
	}
	for _, p := range sub.Unbind {
		delete(q.bindings, p)
	}
	if sub.NoAck {
		q.items = nil // as amqpbus: the OnConnect relist covers what waited
	}
	return b.gen
}

// serve hands out deliveries until ctx is done or the generation changes.
func (b *Bus) serve(ctx context.Context, sub bus.Subscription, gen int, attempts map[uint64]int) {
	q := b.queues[sub.Queue] // queues are never removed, so no lock needed to keep q
	for {
		it, ok := b.next(ctx, q, gen)
		if !ok {
			return
		}
		attempts[it.seq]++
		d := bus.Delivery{Message: it.msg, Redelivered: it.redelivered, Attempt: attempts[it.seq]}
		err := sub.Handler(ctx, d)

		if sub.NoAck {
			// The message was forgotten as it was handed out.
			if err != nil {
				b.log.Warn("bus handler failed; message dropped (no-ack subscription)", "queue", sub.Queue,
					"key", it.msg.RoutingKey, "err", err)
			}
			delete(attempts, it.seq)
			if ctx.Err() != nil || !b.connected(gen) {
				return
			}
			continue
		}
		if err == nil && b.connected(gen) {
			delete(attempts, it.seq)
			continue
		}
		if err != nil && sub.MaxAttempts > 0 && attempts[it.seq] >= sub.MaxAttempts {
			b.log.Error("bus dropping message after repeated handler errors", "queue", sub.Queue,
				"key", it.msg.RoutingKey, "attempts", attempts[it.seq], "err", err)
			delete(attempts, it.seq)
			continue
		}
		if err != nil && b.connected(gen) {
			// Hold the queue head for the backoff, like amqpbus does, so later
			// messages never overtake the failing one.
			_ = bus.Sleep(ctx, sub.Retry.Delay(attempts[it.seq]-1))
		}
		b.requeueHead(q, it)
		if ctx.Err() != nil || !b.connected(gen) {
			return
		}
	}
}

func (b *Bus) next(ctx context.Context, q *queue, gen int) (item, bool) {
	b.mu.Lock()
	for b.gen == gen && len(q.items) == 0 {
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return item{}, false
		case <-ch:
		}
		b.mu.Lock()
	}
	defer b.mu.Unlock()
	if b.gen != gen {
		return item{}, false
	}
	it := q.items[0]
	q.items = q.items[1:]
	return it, true
}

func (b *Bus) connected(gen int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen == gen
}

func (b *Bus) requeueHead(q *queue, it item) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it.redelivered = true
	q.items = append([]item{it}, q.items...)
	b.notifyLocked()
}
