package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"minik8s.io/shared/bus"
)

// Defaults for Config fields left zero.
const (
	DefaultPrefix          = "/registry/"
	DefaultRevisionKey     = "/minik8s/outbox/revision"
	DefaultElectionKey     = "/minik8s/outbox/leader"
	DefaultSessionTTL      = 10 * time.Second
	DefaultMaxBatch        = 512
	DefaultWindow          = 1
	DefaultAdvanceEvery    = 1000
	DefaultAdvanceInterval = 100 * time.Millisecond
)

// Config configures an Outbox.
type Config struct {
	Client    *clientv3.Client // required
	Publisher bus.Publisher    // required
	Logger    *slog.Logger
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Identity is this candidate's value in the election (for humans reading
	// etcd); empty means "<hostname>/<pid>".
	Identity string

	Prefix      string // watched prefix, DefaultPrefix
	RevisionKey string // where the published revision is kept, DefaultRevisionKey
	ElectionKey string // election prefix, DefaultElectionKey
	// SessionTTL is the leader lease: a dead leader is replaced after at most
	// this long. Rounded to whole seconds.
	SessionTTL time.Duration
	// MaxBatch caps messages per Publish call.
	MaxBatch int
	// Window bounds the batches sent but not yet confirmed, with a pipelining publisher.
	Window int
	// The stored revision advances after AdvanceEvery published events or
	// AdvanceInterval, whichever comes first; a crash republishes at most that
	// tail.
	AdvanceEvery    int
	AdvanceInterval time.Duration
	// Retry is the backoff after a failed publish, watch or election; zero
	// fields mean 100ms initial, 5s max.
	Retry bus.Backoff
}

// Outbox publishes etcd changes. Build it with New and run it with Start.
type Outbox struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
}

// New validates cfg and fills its defaults. It does no I/O.
func New(cfg Config) (*Outbox, error) {
	if cfg.Client == nil {
		return nil, errors.New("outbox: etcd client is required")
	}
	if cfg.Publisher == nil {
		return nil, errors.New("outbox: publisher is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	setDefault(&cfg.Prefix, DefaultPrefix)
	setDefault(&cfg.RevisionKey, DefaultRevisionKey)
	setDefault(&cfg.ElectionKey, DefaultElectionKey)
	setDefault(&cfg.SessionTTL, DefaultSessionTTL)
	setDefault(&cfg.MaxBatch, DefaultMaxBatch)
	setDefault(&cfg.Window, DefaultWindow)
	setDefault(&cfg.AdvanceEvery, DefaultAdvanceEvery)
	setDefault(&cfg.AdvanceInterval, DefaultAdvanceInterval)
	setDefault(&cfg.Retry.Initial, 100*time.Millisecond)
	setDefault(&cfg.Retry.Max, 5*time.Second)
	m := newMetrics()
	if cfg.Registerer != nil {
		if err := m.register(cfg.Registerer); err != nil {
			return nil, fmt.Errorf("outbox: register metrics: %w", err)
		}
	}
	return &Outbox{cfg: cfg, log: cfg.Logger.With("component", "outbox"), metrics: m}, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Revision returns the stored published revision: every change up to it has
// been confirmed by the broker. The compactor must not compact past it.
func (o *Outbox) Revision(ctx context.Context) (int64, error) {
	return StoredRevision(ctx, o.cfg.Client, o.cfg.RevisionKey)
}

// StoredRevision reads the published revision kept at key (0 if none yet), for
// callers, such as a compactor in another apiserver, that have no Outbox.
func StoredRevision(ctx context.Context, c *clientv3.Client, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("read outbox revision: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	rev, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse outbox revision %q: %w", resp.Kvs[0].Value, err)
	}
	return rev, nil
}

// Start campaigns for leadership and, while leader, publishes. It blocks until
// ctx is done and returns nil then; it never gives up on its own, since
// etcd and the broker are expected to come back.
func (o *Outbox) Start(ctx context.Context) error {
	o.log.Info("outbox starting", "identity", o.cfg.Identity, "prefix", o.cfg.Prefix)
	for attempt := 0; ; attempt++ {
		led, err := o.campaignAndLead(ctx)
		if ctx.Err() != nil {
			o.log.Info("outbox stopped")
			return nil
		}
		if led {
			attempt = 0
		}
		delay := o.cfg.Retry.Delay(attempt)
		o.log.Warn("outbox lost leadership or failed, retrying", "err", err, "retryIn", delay)
		if bus.Sleep(ctx, delay) != nil {
			return nil
		}
	}
}

// campaignAndLead runs one election session. led reports whether it became
// leader, which resets the retry backoff.
func (o *Outbox) campaignAndLead(ctx context.Context) (led bool, err error) {
	ttl := max(int(o.cfg.SessionTTL/time.Second), 1)
	sess, err := concurrency.NewSession(o.cfg.Client, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("open election session: %w", err)
	}
	defer sess.Close()

	// Leadership lasts as long as the session's lease: when it expires (a
	// partition, a long pause) another apiserver may already be publishing,
	// so stop at once.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-lctx.Done():
		}
	}()

	el := concurrency.NewElection(sess, o.cfg.ElectionKey)
	if err := el.Campaign(lctx, o.cfg.Identity); err != nil {
		return false, fmt.Errorf("campaign: %w", err)
	}
	o.log.Info("outbox elected leader", "identity", o.cfg.Identity)
	o.metrics.elected.Inc()
	o.metrics.leader.Set(1)
	defer o.metrics.leader.Set(0)

	err = o.lead(lctx, el)

	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if rerr := el.Resign(rctx); rerr != nil && ctx.Err() == nil {
		o.log.Warn("outbox resign failed", "err", rerr)
	}
	if lctx.Err() != nil && ctx.Err() == nil && err == nil {
		err = errors.New("election session expired")
	}
	return true, err
}
