package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
)

// Defaults of a Function's spec and of the gateway.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxQueue         = 100
	DefaultColdStartTimeout = 2 * time.Minute
	DefaultProbeInterval    = 15 * time.Millisecond
	// DefaultMaxBodyBytes bounds a call's JSON body (as the API bounds objects).
	DefaultMaxBodyBytes = 3 << 20
)

// Counter counts calls for the autoscaler (a *counters.Recorder).
type Counter interface {
	// Begin records that a call of fn ("namespace/name") begins; end records that it ended.
	Begin(fn string) (end func())
}

// Activator is told that a call waits for a function with no ready pod (the autoscaler).
type Activator interface {
	Activate(namespace, name string)
}

// Config wires a Gateway.
type Config struct {
	// Functions and Pods are the informers of all Functions and all Pods.
	Functions, Pods *informer.Informer
	Counter         Counter
	Activator       Activator
	// Workflows serves POST /workflow/<ns>/<name>; nil answers 404.
	Workflows http.Handler
	// Gatherer serves /metrics (default: Registerer, when it is a Gatherer too, as the
	// component's registry is); Registerer gets the gateway's metrics. Either may be nil.
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	// Healthy answers /healthz (e.g. the informers have synced); nil is always healthy.
	Healthy func() bool
	// ColdStartTimeout bounds how long a call waits for a pod (at least the function's
	// timeout); default 2 minutes.
	ColdStartTimeout time.Duration
	// ProbeInterval is how often a starting pod's /readyz is probed (default 15 ms).
	ProbeInterval time.Duration
	MaxBodyBytes  int64
	// Transport reaches the pods; default a tuned http.Transport.
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// Gateway is the functions' HTTP trigger.
type Gateway struct {
	cfg       Config
	functions informer.Lister[*serverlessv1.Function]
	client    *http.Client

	baseCtx context.Context
	stop    context.CancelFunc

	mu    sync.Mutex
	pools map[string]*pool

	m *gatewayMetrics
}

// New returns a gateway and registers its pod handler with cfg.Pods. It does no I/O.
func New(cfg Config) *Gateway {
	if cfg.ColdStartTimeout <= 0 {
		cfg.ColdStartTimeout = DefaultColdStartTimeout
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Transport == nil {
		cfg.Transport = NewTransport()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if g, ok := cfg.Registerer.(prometheus.Gatherer); ok && cfg.Gatherer == nil {
		cfg.Gatherer = g
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{
		cfg:       cfg,
		functions: informer.NewLister[*serverlessv1.Function](cfg.Functions.Store()),
		client:    &http.Client{Transport: cfg.Transport},
		baseCtx:   ctx, stop: cancel,
		pools: map[string]*pool{},
		m:     newMetrics(cfg.Registerer),
	}
	cfg.Pods.AddEventHandler(g.podHandler())
	cfg.Functions.AddEventHandler(informer.HandlerFuncs{DeleteFunc: func(obj runtime.Object) {
		if fn, ok := informer.DeletedObject(obj).(*serverlessv1.Function); ok {
			g.forgetIfGone(fn.Namespace, fn.Name)
		}
	}})
	return g
}

// NewTransport is a transport for many short calls to pods on this host's network: kept-alive
// connections, a quick dial (a pod that refuses is tried elsewhere), no compression.
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// Start runs until ctx ends, then stops the gateway's probes. It returns nil.
func (g *Gateway) Start(ctx context.Context) error {
	<-ctx.Done()
	g.stop()
	return nil
}

// Handler serves POST /function/<ns>/<name>, POST /workflow/<ns>/<name>, GET /metrics and
// GET /healthz.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/function/", g.serveFunction)
	mux.HandleFunc("/workflow/", func(w http.ResponseWriter, r *http.Request) {
		if g.cfg.Workflows == nil {
			writeError(w, http.StatusNotFound, "workflows are not served by this gateway")
			return
		}
		g.cfg.Workflows.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if g.cfg.Healthy != nil && !g.cfg.Healthy() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	if g.cfg.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// pool returns the pool of function key, making it on first use.
func (g *Gateway) pool(key string) *pool {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pools[key]
	if p == nil {
		p = newPool(key)
		g.pools[key] = p
	}
	return p
}

// ReadyPods lists the pods of namespace/name the gateway sends calls to.
func (g *Gateway) ReadyPods(namespace, name string) []string {
	return g.pool(namespace + "/" + name).readyPods()
}

// WaitReady blocks until namespace/name has a pod the gateway sends calls to, or ctx ends.
func (g *Gateway) WaitReady(ctx context.Context, namespace, name string) error {
	p := g.pool(namespace + "/" + name)
	for {
		p.mu.Lock()
		ready, changed := p.anyReady(), p.changed
		p.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
