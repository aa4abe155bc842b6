package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/leaderelection"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
	"minik8s.io/shared/run"
)

// DefaultFirstListWait lets the caches' first lists wait for the bus's connect relist (see
// informer.Config.FirstListWait); without a broker a component starts from the API alone.
const DefaultFirstListWait = 5 * time.Second

// Options describe a component to the manager.
type Options struct {
	// Name is the component's: the events' source, the bus connection's name, logs.
	Name string
	// Host fills the events' source host; default the machine's hostname.
	Host string
	// Kubeconfig locates the apiserver; ClientConfig, when set, is used instead.
	Kubeconfig   string
	ClientConfig *client.Config
	// UserAgent, when set, replaces the client's.
	UserAgent string

	// AMQPURL and Queue: the component's bus queue. No Queue, no bus.
	AMQPURL string
	Queue   string
	// Bindings of Queue; default bus.Bindings(Queue).
	Bindings []string
	// Unbind are retired bindings removed on every connect (bus.RetiredBindings).
	Unbind []string
	// BusName names the bus connection; default Name.
	BusName string
	// BusHandler handles the deliveries; default the informer factory's Handle (it never
	// fails, so the broker is asked for no acknowledgements). A handler of its own is acked.
	BusHandler bus.Handler
	// BusNoAck consumes for BusHandler without acknowledgements, as for the default handler:
	// only for a handler that never fails (see bus.Subscription.NoAck).
	BusNoAck bool

	// RelistPeriod is the informers' safety net under the bus; FirstListWait as
	// DefaultFirstListWait when zero (negative: list at once).
	RelistPeriod  time.Duration
	FirstListWait time.Duration

	// EventsQPS and EventsBurst throttle the recorder (0: unthrottled).
	EventsQPS   float64
	EventsBurst int

	// LeaderElection, when set, elects one process of the component: its bus queue is
	// consumed only while this one leads (every candidate shares the queue, and the broker
	// would split the messages), and AddLeading's runnables run only then.
	LeaderElection *LeaderElection

	// MetricsAddress serves /metrics and /healthz; DebugAddress Go's profiles. Empty: none.
	MetricsAddress string
	DebugAddress   string

	ShutdownTimeout time.Duration
	Logger          *slog.Logger
}

// LeaderElection names the Lease candidates compete for.
type LeaderElection struct {
	Namespace, Name string
	// Identity tells candidates apart; default hostname_<random>.
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Manager holds a component's shared parts. Build with New, declare the parts, run Start.
type Manager struct {
	opts     Options
	log      *slog.Logger
	ccfg     *client.Config
	client   *client.Client
	reg      *metrics.Registry
	recorder *record.Recorder
	factory  *informer.Factory
	elector  *leaderelection.Elector

	parts     []part
	leading   []part
	onConnect []func(ctx context.Context) error
	routes    map[string]bus.Handler
}

type part struct {
	name string
	r    run.Runnable
}

// New builds the client, the metrics registry (every work loop and queue made from now on
// reports to it), the recorder, the informer factory and the elector. It does no I/O.
func New(opts Options) (*Manager, error) {
	if opts.Name == "" {
		return nil, errors.New("manager: a component needs a name")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	m := &Manager{opts: opts, log: log, ccfg: opts.ClientConfig, reg: metrics.NewRegistry()}
	if m.ccfg == nil {
		if opts.Kubeconfig == "" {
			return nil, errors.New("--kubeconfig is required")
		}
		ccfg, err := client.FromKubeconfig(opts.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		m.ccfg = ccfg
	}
	if opts.UserAgent != "" {
		m.ccfg.UserAgent = opts.UserAgent
	}
	cl, err := client.New(m.ccfg)
	if err != nil {
		return nil, err
	}
	m.client = cl.WithLogger(log)
	reconcile.SetMetrics(m.reg)
	m.recorder = record.New(record.Config{Component: opts.Name, Host: opts.Host, Sink: record.NewAPISink(m.client),
		QPS: opts.EventsQPS, Burst: opts.EventsBurst, Logger: log})
	wait := opts.FirstListWait
	switch {
	case wait == 0 && opts.Queue != "":
		wait = DefaultFirstListWait
	case wait < 0 || opts.Queue == "":
		wait = 0
	}
	m.factory = informer.NewFactory(informer.ClientSource(m.client), informer.FactoryConfig{
		RelistPeriod: opts.RelistPeriod, FirstListWait: wait, Logger: log.With("part", "informers"), Metrics: m.reg.Informers()})
	if le := opts.LeaderElection; le != nil {
		id := le.Identity
		if id == "" {
			b := make([]byte, 4)
			_, _ = rand.Read(b)
			id = opts.Host + "_" + hex.EncodeToString(b)
		}
		m.elector, err = leaderelection.New(leaderelection.Config{
			Leases:    client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](m.client),
			Namespace: le.Namespace, Name: le.Name, Identity: id,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			Logger: log,
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Client is the component's REST client; ClientConfig its connection, for streaming clients.
func (m *Manager) Client() *client.Client { return m.client }

// ClientConfig is the connection Client uses.
func (m *Manager) ClientConfig() *client.Config { return m.ccfg }

// Informers is the bus-fed informer factory: ask it for the caches a part reads before Start.
func (m *Manager) Informers() *informer.Factory { return m.factory }

// Recorder writes the component's events.
func (m *Manager) Recorder() *record.Recorder { return m.recorder }

// Metrics is the component's registry; register the component's own metrics in it.
func (m *Manager) Metrics() *metrics.Registry { return m.reg }

// Logger is the component's logger.
func (m *Manager) Logger() *slog.Logger { return m.log }

// Leader says whether this process leads now: always true without leader election. A part
// that keeps running as a standby (the scheduler) asks it before acting.
func (m *Manager) Leader() interface{ IsLeader() bool } {
	if m.elector == nil {
		return always{}
	}
	return m.elector
}

type always struct{}

func (always) IsLeader() bool { return true }

// Add declares a part that runs from Start until the component stops. Parts start in the
// order added and stop in the reverse order.
func (m *Manager) Add(name string, r run.Runnable) { m.parts = append(m.parts, part{name, r}) }

// AddLeading declares a part that runs only while this process leads, once the caches have
// synced. A process that loses the lead stops (Start returns leaderelection.ErrLostLeadership):
// its caches and queues may be behind the new leader's.
func (m *Manager) AddLeading(name string, r run.Runnable) {
	m.leading = append(m.leading, part{name, r})
}

// Route hands the bus messages about resource to h instead of the informers: a part that
// follows a resource its own way (the kubelet's pods, kept in Redis). h may fail; the message
// is then delivered again.
func (m *Manager) Route(resource string, h bus.Handler) {
	if m.routes == nil {
		m.routes = map[string]bus.Handler{}
	}
	m.routes[resource] = h
}

// OnConnect adds work done after every bus (re)connect, after the caches' relist is asked for.
func (m *Manager) OnConnect(f func(ctx context.Context) error) { m.onConnect = append(m.onConnect, f) }

// Start runs the component until ctx ends or a part fails, then stops it in order: the HTTP
// servers first, then the leader-gated parts, the bus, the component's parts, the caches and
// the recorder.
func (m *Manager) Start(ctx context.Context) error {
	g := &run.Group{ShutdownTimeout: m.opts.ShutdownTimeout, Logger: m.log}
	g.Add("recorder", m.recorder)
	g.Add("informers", m.factory)
	for _, p := range m.parts {
		g.Add(p.name, p.r)
	}
	if m.opts.Queue != "" {
		sub, err := m.subscription()
		if err != nil {
			return err
		}
		b := amqpbus.New(amqpbus.Config{URL: m.opts.AMQPURL, Name: cmp(m.opts.BusName, m.opts.Name), Logger: m.log.With("part", "bus")})
		defer b.Close()
		for _, r := range Unbound(m.factory.Resources(), sub.Bindings) {
			m.log.Warn("the bus queue is not bound to a resource a part caches: its cache follows the relists alone",
				"resource", r, "relistPeriod", m.opts.RelistPeriod)
		}
		g.Add("bus", run.Func(func(ctx context.Context) error { return consumeWhileLeading(ctx, b, sub, m.Leader()) }))
	}
	switch {
	case m.elector != nil && len(m.leading) > 0:
		g.Add("leading", run.Func(func(ctx context.Context) error { return m.elector.Run(ctx, m.lead) }))
	case m.elector != nil:
		g.Add("leader-election", m.elector)
	case len(m.leading) > 0:
		g.Add("leading", run.Func(m.lead))
	}
	if m.opts.MetricsAddress != "" {
		// A standby serves its metrics too: its caches and bus are worth watching.
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, m.opts.MetricsAddress, m.reg, m.log) }))
	}
	if m.opts.DebugAddress != "" {
		g.Add("debug", run.Func(func(ctx context.Context) error { return metrics.ServeDebug(ctx, m.opts.DebugAddress, m.log) }))
	}
	names := make([]string, 0, len(m.parts)+len(m.leading))
	for _, p := range append(slices.Clone(m.parts), m.leading...) {
		names = append(names, p.name)
	}
	m.log.Info("starting", "component", m.opts.Name, "queue", m.opts.Queue, "leaderElect", m.elector != nil, "parts", names)
	return g.Run(ctx)
}

// lead runs the leader-gated parts once the caches have synced.
func (m *Manager) lead(ctx context.Context) error {
	if !informer.WaitForSync(ctx, m.factory.HasSynced) {
		return nil
	}
	g := &run.Group{ShutdownTimeout: m.opts.ShutdownTimeout, Logger: m.log}
	for _, p := range m.leading {
		g.Add(p.name, p.r)
	}
	return g.Run(ctx)
}

func (m *Manager) subscription() (bus.Subscription, error) {
	bindings := m.opts.Bindings
	if bindings == nil {
		var ok bool
		if bindings, ok = bus.Bindings(m.opts.Queue); !ok {
			return bus.Subscription{}, fmt.Errorf("no bus bindings for queue %q", m.opts.Queue)
		}
	}
	sub := bus.Subscription{Queue: m.opts.Queue, Bindings: bindings, Unbind: m.opts.Unbind, Handler: m.opts.BusHandler,
		OnConnect: func(ctx context.Context) error {
			// Anything changed from now on is in the queue: relist to catch up on the rest.
			m.factory.RelistAll()
			m.reg.BusConnected()
			for _, f := range m.onConnect {
				if err := f(ctx); err != nil {
					return err
				}
			}
			return nil
		}}
	switch {
	case sub.Handler != nil:
		sub.NoAck = m.opts.BusNoAck
	case len(m.routes) > 0:
		sub.Handler = func(ctx context.Context, d bus.Delivery) error {
			if h := m.routes[d.Resource()]; h != nil {
				return h(ctx, d)
			}
			return m.factory.Handle(ctx, d)
		}
	default:
		// Handle never fails (what it cannot apply, the relist repairs), so the broker need
		// not track acknowledgements.
		sub.Handler, sub.NoAck = m.factory.Handle, true
	}
	return sub, nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Unbound returns the resources whose changes none of the bindings takes.
func Unbound(resources, bindings []string) []string {
	var out []string
	for _, r := range resources {
		key := bus.RoutingKey(r, "", "x", nil, nil, "MODIFIED")
		if !slices.ContainsFunc(bindings, func(p string) bool { return bus.Match(p, key) }) {
			out = append(out, r)
		}
	}
	return out
}

// consumeWhileLeading consumes the queue only while this process leads (always, without
// leader election). A standby keeps its caches from the periodic relist, and relists at once
// when it takes over (OnConnect).
func consumeWhileLeading(ctx context.Context, b bus.Consumer, sub bus.Subscription, lead interface{ IsLeader() bool }) error {
	if _, ok := lead.(always); ok {
		return b.Consume(ctx, sub)
	}
	const poll = 200 * time.Millisecond
	for {
		for !lead.IsLeader() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		}
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			for lead.IsLeader() {
				select {
				case <-lctx.Done():
					return
				case <-time.After(poll):
				}
			}
			cancel()
		}()
		err := b.Consume(lctx, sub)
		cancel()
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}
