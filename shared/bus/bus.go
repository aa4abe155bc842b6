package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Exchange is the durable topic exchange every change is published to.
const Exchange = "minik8s.events"

// Event types, the same words a Kubernetes watch uses.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
)

// Header names carried by every message the outbox publishes, so a consumer can
// route a delivery to a work queue key without decoding the body.
const (
	HeaderResource        = "resource"
	HeaderNamespace       = "namespace"
	HeaderName            = "name"
	HeaderResourceVersion = "resourceVersion"
)

// Event is the body of every message: the same shape as one watch event.
// Object is the object as stored, with metadata.resourceVersion set to the
// revision of the change (for DELETED: the last stored object, with the
// revision of the delete).
type Event struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// Message is one publication.
type Message struct {
	// RoutingKey is the topic key; see RoutingKey.
	RoutingKey string
	// ID identifies the change (the outbox uses "<etcd key>@<revision>"), so a
	// consumer can recognise a redelivered or republished message.
	ID string
	// Body is normally a JSON-encoded Event.
	Body []byte
	// Headers are string headers such as HeaderResource.
	Headers map[string]string
}

// Delivery is a message as handed to a Handler.
type Delivery struct {
	Message
	// Redelivered is true when the broker has handed this message out before
	// (a previous handler error, or a connection lost before the ack).
	Redelivered bool
	// Attempt counts handler calls for this message in this process, from 1.
	Attempt int
}

// Resource is the plural name of the resource a delivery is about (plural.group for a custom
// resource): its header, or the first word of its routing key, decoded, for messages published
// before the header existed.
func (d Delivery) Resource() string {
	if r := d.Headers[HeaderResource]; r != "" {
		return r
	}
	r, _, _ := strings.Cut(d.RoutingKey, ".")
	return DecodeWord(r)
}

// Publisher publishes messages.
type Publisher interface {
	// Publish sends msgs, in order, and returns nil only once the broker has
	// confirmed every one of them (publisher confirms). Passing many messages in
	// one call is the fast path: all are sent before any confirm is awaited.
	// On error some prefix of msgs may have been delivered; callers republish
	// (at-least-once).
	Publish(ctx context.Context, msgs ...Message) error
}

// Pipeliner is a Publisher that keeps publishing while earlier messages still await their
// confirms, so one slow confirm does not hold back the messages behind it.
//
// Send never reconnects: once a send or a confirm has failed, every Send fails with
// ErrReconnect until a Publish (which does reconnect) succeeds. A caller that drains its
// outstanding waits and restarts from its last confirmed message before calling Publish
// therefore never has later messages overtake a lost batch.
type Pipeliner interface {
	Publisher
	// Send publishes msgs, in order, and returns a function that waits for their confirms.
	Send(ctx context.Context, msgs ...Message) (wait func(context.Context) error, err error)
}

// ErrReconnect is returned by Pipeliner.Send after a failure, until Publish reconnects.
var ErrReconnect = errors.New("bus: publisher must reconnect first")

// Handler processes one delivery. Returning nil acknowledges it; an error makes
// the consumer wait (backoff) and redeliver it before any later message of the
// queue, so per-queue order holds even across failures.
type Handler func(ctx context.Context, d Delivery) error

// Subscription describes one durable queue and how to consume it.
type Subscription struct {
	// Queue is the durable queue name, normally the consumer name (see
	// QueueScheduler, KubeletQueue...).
	Queue string
	// Bindings are the topic patterns bound to Exchange; see Bindings.
	Bindings []string
	// Unbind are patterns removed from the queue on every connect: bindings an older version
	// made that the queue no longer wants. A durable queue keeps its bindings across
	// consumers, so without this an upgraded consumer would keep receiving what it dropped.
	// Unbinding a pattern that is not bound is not an error.
	Unbind []string
	// Prefetch bounds the unacknowledged deliveries in flight; 0 means
	// DefaultPrefetch.
	Prefetch int
	// Handler is called for each delivery, one at a time, in queue order.
	Handler Handler
	// OnConnect is called after every (re)connect, once the queue exists and is
	// bound and before any delivery is handled: the place to relist, since
	// anything changed after this point is in the queue. An error counts as a
	// failed connect and is retried with backoff.
	OnConnect func(ctx context.Context) error
	// Retry is the backoff between redeliveries of a failing message; zero
	// fields take DefaultRetry's.
	Retry Backoff
	// MaxAttempts drops (acknowledges and logs) a message after this many
	// failed handler calls, so one poisoned message cannot stall the queue for
	// ever; consumers relist periodically, so a dropped hint is recovered. 0
	// means DefaultMaxAttempts, a negative value means never drop.
	MaxAttempts int
	// NoAck has the broker forget each message as soon as it is sent (AMQP's no-ack mode),
	// which spares it the bookkeeping of unacknowledged deliveries. It is for consumers
	// that relist in OnConnect, so whatever a lost connection took with it is repaired, and
	// whose handler does not fail: a handler error is logged and the message dropped (Retry
	// and MaxAttempts do not apply) until the next relist. Prefetch does not bound what is
	// in flight, so what waited in the queue while nobody consumed is purged on connect,
	// before OnConnect: the relist covers it, and a backlog would arrive all at once.
	NoAck bool
}

// Consumer consumes queues.
type Consumer interface {
	// Consume declares and binds sub.Queue and handles its deliveries until ctx
	// is done, reconnecting with backoff whenever the connection is lost. It
	// returns nil when ctx is done and an error only for an invalid
	// subscription.
	Consume(ctx context.Context, sub Subscription) error
}

// Defaults for Subscription fields left zero.
const (
	DefaultPrefetch    = 64
	DefaultMaxAttempts = 10
)

// DefaultRetry is the redelivery backoff used when Subscription.Retry is zero.
var DefaultRetry = Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second}

// ErrInvalidSubscription is returned by Consume for a subscription it cannot
// serve.
var ErrInvalidSubscription = errors.New("invalid subscription")

// Validate checks sub and fills its defaults.
func (sub *Subscription) Validate() error {
	switch {
	case sub.Queue == "":
		return errors.Join(ErrInvalidSubscription, errors.New("queue name is empty"))
	case sub.Handler == nil:
		return errors.Join(ErrInvalidSubscription, errors.New("handler is nil"))
	case len(sub.Bindings) == 0:
		return errors.Join(ErrInvalidSubscription, errors.New("no bindings"))
	}
	if sub.Prefetch <= 0 {
		sub.Prefetch = DefaultPrefetch
	}
	if sub.MaxAttempts == 0 {
		sub.MaxAttempts = DefaultMaxAttempts
	}
	if sub.Retry.Initial <= 0 {
		sub.Retry.Initial = DefaultRetry.Initial
	}
	if sub.Retry.Max <= 0 {
		sub.Retry.Max = DefaultRetry.Max
	}
	return nil
}

// DecodeEvent decodes a delivery body.
func DecodeEvent(body []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	return ev, nil
}
