package amqpbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"minik8s.io/shared/bus"
)

// DefaultURL is the broker used when Config.URL is empty.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// Config configures a Bus.
type Config struct {
	// URL is the AMQP URL; empty means DefaultURL.
	URL string
	// Exchange is the topic exchange; empty means bus.Exchange. Tests use a
	// private one.
	Exchange string
	// Name prefixes the client-provided connection names, which the
	// management UI shows: "<Name>.publisher" and "<Name>.consumer.<queue>".
	// Empty means "minik8s".
	Name string
	// Logger may be nil.
	Logger *slog.Logger
	// Reconnect is the backoff between connection attempts; zero fields mean
	// 500ms initial, 30s max.
	Reconnect bus.Backoff
	// DialTimeout bounds one TCP+AMQP handshake; zero means 10s.
	DialTimeout time.Duration
}

// Bus is a RabbitMQ-backed bus. Publish shares one connection (serialised, so
// one publisher's messages keep their order); every Consume call has its own
// connection, so one slow or failing consumer does not disturb the others.
type Bus struct {
	cfg Config
	log *slog.Logger

	mu   sync.Mutex // guards the publishing connection and channel
	conn *amqp.Connection
	ch   *amqp.Channel
	// broken is set when a send or confirm failed; only Publish clears it.
	broken bool
}

var (
	_ bus.Pipeliner = (*Bus)(nil)
	_ bus.Consumer  = (*Bus)(nil)
)

// New returns a Bus; it connects lazily, on first use.
func New(cfg Config) *Bus {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.Exchange == "" {
		cfg.Exchange = bus.Exchange
	}
	if cfg.Name == "" {
		cfg.Name = "minik8s"
	}
	if cfg.Reconnect.Initial <= 0 {
		cfg.Reconnect.Initial = 500 * time.Millisecond
	}
	if cfg.Reconnect.Max <= 0 {
		cfg.Reconnect.Max = 30 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bus{cfg: cfg, log: log}
}

func (b *Bus) dial(name string) (*amqp.Connection, error) {
	conn, err := amqp.DialConfig(b.cfg.URL, amqp.Config{
		Properties: amqp.Table{"connection_name": name},
		Heartbeat:  10 * time.Second,
		Dial:       amqp.DefaultDial(b.cfg.DialTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("dial amqp as %s: %w", name, err)
	}
	return conn, nil
}

func (b *Bus) declareExchange(ch *amqp.Channel) error {
	if err := ch.ExchangeDeclare(b.cfg.Exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", b.cfg.Exchange, err)
	}
	return nil
}

// Publish implements bus.Publisher: every message is sent, transient, then each confirm is
// awaited. It reconnects when the connection is gone or an earlier send failed. Transient,
// because every consumer relists on every (re)connect, and a broker restart, the only thing
// persistence guards against, reconnects them all; persisting cost the broker a disk write
// per message and queue (docs/bus.md, Guarantees).
func (b *Bus) Publish(ctx context.Context, msgs ...bus.Message) error {
	b.mu.Lock()
	if b.broken {
		b.resetLocked()
		b.broken = false
	}
	ch, err := b.publishChannelLocked()
	if err != nil {
		b.mu.Unlock()
		return err
	}
	wait, err := b.sendLocked(ctx, ch, msgs)
	b.mu.Unlock()
	if err != nil {
		return err
	}
	return wait(ctx)
}

// Send implements bus.Pipeliner: it publishes on the current connection and leaves the
// confirms to the returned wait.
func (b *Bus) Send(ctx context.Context, msgs ...bus.Message) (func(context.Context) error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken || b.ch == nil || b.ch.IsClosed() || b.conn.IsClosed() {
		return nil, bus.ErrReconnect
	}
	return b.sendLocked(ctx, b.ch, msgs)
}

// sendLocked publishes msgs on ch with deferred confirms. A failure marks the bus broken and
// drops the connection, so no later Send can go out on a fresh one before a Publish.
func (b *Bus) sendLocked(ctx context.Context, ch *amqp.Channel, msgs []bus.Message) (func(context.Context) error, error) {
	confirms := make([]*amqp.DeferredConfirmation, 0, len(msgs))
	now := time.Now()
	for _, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, b.cfg.Exchange, m.RoutingKey, false, false, amqp.Publishing{
			ContentType:  "application/json",
			DeliveryMode: amqp.Transient,
			MessageId:    m.ID,
			Timestamp:    now,
			Headers:      toTable(m.Headers),
			Body:         m.Body,
		})
		if err != nil {
			b.breakLocked()
			return nil, fmt.Errorf("publish %s: %w", m.RoutingKey, err)
		}
		confirms = append(confirms, dc)
	}
	return func(ctx context.Context) error {
		for i, dc := range confirms {
			ack, err := dc.WaitContext(ctx)
			if err == nil && !ack {
				// A nack, or the channel closed under us: the state of the rest is unknown.
				err = errors.New("broker did not confirm (nack or connection lost)")
			}
			if err != nil {
				b.mu.Lock()
				// Only the connection this batch went out on is condemned; a newer one,
				// made by a Publish since, is left alone.
				if b.ch == ch || b.ch == nil {
					b.breakLocked()
				}
				b.mu.Unlock()
				return fmt.Errorf("confirm of %s: %w", msgs[i].RoutingKey, err)
			}
		}
		return nil
	}, nil
}

func (b *Bus) breakLocked() {
	b.broken = true
	b.resetLocked()
}

func (b *Bus) publishChannelLocked() (*amqp.Channel, error) {
	if b.ch != nil && !b.ch.IsClosed() && !b.conn.IsClosed() {
		return b.ch, nil
	}
	b.resetLocked()
	conn, err := b.dial(b.cfg.Name + ".publisher")
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err == nil {
		err = b.declareExchange(ch)
	}
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("open publishing channel: %w", err)
	}
	b.conn, b.ch = conn, ch
	b.log.Info("bus publisher connected", "exchange", b.cfg.Exchange)
	return ch, nil
}

func (b *Bus) resetLocked() {
	if b.conn != nil {
		_ = b.conn.Close()
	}
	b.conn, b.ch = nil, nil
}

// Close closes the publishing connection; running Consume calls end with their
// contexts.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resetLocked()
	return nil
}

func toTable(h map[string]string) amqp.Table {
	if len(h) == 0 {
		return nil
	}
	t := make(amqp.Table, len(h))
	for k, v := range h {
		t[k] = v
	}
	return t
}

func fromTable(t amqp.Table) map[string]string {
	if len(t) == 0 {
		return nil
	}
	h := make(map[string]string, len(t))
	for k, v := range t {
		if s, ok := v.(string); ok {
			h[k] = s
		} else {
			h[k] = fmt.Sprint(v)
		}
	}
	return h
}

// errRecycle asks for a fresh channel after a handler error.
var errRecycle = errors.New("recycle channel after handler error")
