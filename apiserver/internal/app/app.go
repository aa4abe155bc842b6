package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/apiserver/internal/audit"
	"minik8s.io/apiserver/internal/bootstrap"
	"minik8s.io/apiserver/internal/kubernetesservice"
	"minik8s.io/apiserver/internal/server"
	"minik8s.io/apiserver/internal/storage/etcdstore"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/shared/run"
)

// Config is the apiserver's configuration, from flags.
type Config struct {
	Home             string
	BindAddress      string
	SecurePort       int
	AdvertiseAddress string
	// EtcdServers are external etcd endpoints; empty runs an embedded etcd in Home/etcd.
	EtcdServers     []string
	EtcdClientURL   string
	EtcdPeerURL     string
	AMQPURL         string
	CompactInterval time.Duration
	// Nodes get an identity and a kubeconfig (kubeconfigs/node-<name>.kubeconfig) at start.
	Nodes           []string
	ShutdownTimeout time.Duration
	// ClusterCIDR is the pod network, split into one /NodeCIDRMaskSize block per node.
	ClusterCIDR      netip.Prefix
	NodeCIDRMaskSize int
	// ServerlessGatewayURL is the serverless gateway the invoke subresource of functions and
	// workflows is proxied to; empty answers invoke with 503.
	ServerlessGatewayURL string
	// AuthorizationMode is AuthorizationNodeRBAC or AuthorizationAlwaysAllow.
	AuthorizationMode string
	// AuditPolicyFile and AuditLog turn the audit log on when both are set.
	AuditPolicyFile string
	AuditLog        audit.LogOptions
}

// The authorization modes, spelt as kube-apiserver's --authorization-mode.
const (
	AuthorizationNodeRBAC    = "Node,RBAC"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// Validate checks a configuration before anything starts.
func (c *Config) Validate() error {
	if c.Home == "" {
		return errors.New("--home must not be empty")
	}
	if c.SecurePort <= 0 || c.SecurePort > 65535 {
		return fmt.Errorf("--secure-port %d is not a port", c.SecurePort)
	}
	if net.ParseIP(c.BindAddress) == nil {
		return fmt.Errorf("--bind-address %q is not an IP address", c.BindAddress)
	}
	if c.ClusterCIDR.IsValid() && (!c.ClusterCIDR.Addr().Is4() || c.NodeCIDRMaskSize < c.ClusterCIDR.Bits() || c.NodeCIDRMaskSize > 30) {
		return fmt.Errorf("--cluster-cidr %s with --node-cidr-mask-size %d: want an IPv4 range and a mask between its size and 30", c.ClusterCIDR, c.NodeCIDRMaskSize)
	}
	if c.AdvertiseAddress != "" && net.ParseIP(c.AdvertiseAddress) == nil {
		return fmt.Errorf("--advertise-address %q is not an IP address", c.AdvertiseAddress)
	}
	if _, err := c.gateway(); err != nil {
		return err
	}
	if (c.AuditPolicyFile == "") != (c.AuditLog.Path == "") {
		return errors.New("--audit-policy-file and --audit-log-path go together")
	}
	switch c.AuthorizationMode {
	case "", AuthorizationNodeRBAC, AuthorizationAlwaysAllow:
	default:
		return fmt.Errorf("--authorization-mode %q: want %q or %q", c.AuthorizationMode, AuthorizationNodeRBAC, AuthorizationAlwaysAllow)
	}
	return nil
}

// gateway is the client of the serverless gateway, or nil when none is configured.
func (c *Config) gateway() (*server.GatewayClient, error) {
	if c.ServerlessGatewayURL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.ServerlessGatewayURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--serverless-gateway-url %q: want http://host:port", c.ServerlessGatewayURL)
	}
	return &server.GatewayClient{URL: u, HTTP: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: server.DefaultGatewayDialTimeout}).DialContext,
		TLSHandshakeTimeout: server.DefaultGatewayDialTimeout,
		MaxIdleConnsPerHost: 64,
	}}}, nil
}

func (c *Config) advertise() string {
	if c.AdvertiseAddress != "" {
		return c.AdvertiseAddress
	}
	if ip := net.ParseIP(c.BindAddress); ip != nil && !ip.IsUnspecified() {
		return c.BindAddress
	}
	return "127.0.0.1"
}

// endpoint is the address pods reach this apiserver at, for the kubernetes Service: the
// advertised address, else the bound one, else (bound to every address) the address of the
// host's default route, as kube-apiserver picks it. Loopback when only loopback is bound.
func (c *Config) endpoint() netip.AddrPort {
	port := uint16(c.SecurePort)
	for _, s := range []string{c.AdvertiseAddress, c.BindAddress} {
		if a, err := netip.ParseAddr(s); err == nil && !a.IsUnspecified() {
			return netip.AddrPortFrom(a.Unmap(), port)
		}
	}
	if a, ok := hostAddress(); ok {
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), port)
}

// hostAddress is the IPv4 address of the host's default route (no packet is sent: a UDP
// "connection" only picks a route), or the first non-loopback IPv4 address.
func hostAddress() (netip.Addr, bool) {
	if c, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		defer c.Close()
		if ap, err := netip.ParseAddrPort(c.LocalAddr().String()); err == nil {
			return ap.Addr().Unmap(), true
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

type tableConverter struct{}

func (tableConverter) Convert(obj runtime.Object, include string, now time.Time) (*metav1.Table, error) {
	return tables.For(obj, tables.Options{IncludeObject: metav1.IncludeObjectPolicy(include)}, now)
}

// Run serves until ctx ends, then shuts down in order: HTTP, background loops, etcd.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	addr := net.JoinHostPort(cfg.advertise(), strconv.Itoa(cfg.SecurePort))
	paths, err := bootstrap.Ensure(cfg.Home, bootstrap.Options{Hosts: []string{cfg.advertise()}, Server: "https://" + addr, Nodes: cfg.Nodes})
	if err != nil {
		return fmt.Errorf("prepare state directory: %w", err)
	}
	for _, f := range paths.Written {
		log.Info("wrote", "file", f)
	}
	tokens, err := bootstrap.LoadTokens(paths.Tokens)
	if err != nil {
		return err
	}
	cli, closeEtcd, err := connectEtcd(ctx, cfg, paths.EtcdDir, log)
	if err != nil {
		return err
	}
	defer closeEtcd()
	store := etcdstore.New(cli, 10*time.Second)
	server.Registry.MustRegister(etcdstore.Latency)
	ob, publisher, err := newOutbox(cli, cfg.AMQPURL, log)
	if err != nil {
		return err
	}
	defer publisher.Close()
	authn, err := newAuth(paths, tokens, addr, log.With("part", "auth"))
	if err != nil {
		return err
	}
	auditor, err := newAudit(cfg, log)
	if err != nil {
		return err
	}
	if auditor != nil {
		defer auditor.Log.Close()
	}
	srv, err := newServer(cfg, store, authn, auditor, addr, log)
	if err != nil {
		return err
	}
	https, err := newHTTPS(cfg, paths, srv, log)
	if err != nil {
		return err
	}
	// Custom resources are served from the first request on, also right after a restart.
	if _, err := srv.Registry().LoadCustomResources(ctx); err != nil {
		return fmt.Errorf("load custom resource definitions: %w", err)
	}
	log.Info("admin kubeconfig", "path", paths.AdminKubeconfig)
	// Stopped in reverse order: HTTP first, then the background loops; etcd closes last.
	g := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout + 5*time.Second, Logger: log}
	g.Add("outbox", ob)
	g.Add("compactor", run.Func(func(ctx context.Context) error {
		return runCompactor(ctx, store, cfg.CompactInterval, ob.Revision, log)
	}))
	g.Add("namespaces", srv)
	if a := srv.Access(); a != nil {
		g.Add("access", a)
	}
	g.Add("bootstrap-policy", run.Func(func(ctx context.Context) error { return authn.reconcilePolicy(ctx, srv.Registry()) }))
	g.Add("kubernetes-service", kubernetesservice.New(kubernetesservice.Config{Registry: srv.Registry(),
		Endpoint:  cfg.endpoint(),
		ClusterIP: allocator.KubernetesServiceIP(), Logger: log.With("part", "kubernetes-service")}))
	g.Add("https", https)
	err = g.Run(ctx)
	log.Info("stopped")
	return err
}

// connectEtcd starts the embedded etcd in dir, or connects to --etcd-servers; close closes
// what was opened.
func connectEtcd(ctx context.Context, cfg Config, dir string, log *slog.Logger) (*clientv3.Client, func(), error) {
	if len(cfg.EtcdServers) > 0 {
		cli, err := etcdstore.Dial(cfg.EtcdServers)
		if err != nil {
			return nil, nil, err
		}
		return cli, func() { cli.Close() }, nil
	}
	emb, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbeddedConfig{DataDir: dir, ClientURL: cfg.EtcdClientURL, PeerURL: cfg.EtcdPeerURL}, log)
	if err != nil {
		return nil, nil, err
	}
	cli := emb.Client()
	return cli, func() { cli.Close(); emb.Close() }, nil
}

// newServer builds the API's handlers over store.
func newServer(cfg Config, store *etcdstore.Store, authn *auth, auditor *server.Audit, addr string, log *slog.Logger) (*server.Server, error) {
	docs, err := newOpenAPI()
	if err != nil {
		return nil, err
	}
	gateway, err := cfg.gateway()
	if err != nil {
		return nil, err
	}
	authn.allowAll = cfg.AuthorizationMode == AuthorizationAlwaysAllow
	return server.New(server.Config{
		Gateway:         gateway,
		Store:           store,
		Authenticator:   authn.authenticate,
		NewAccess:       authn.newAccess,
		Tokens:          authn.tokens,
		Ready:           authn.ready,
		Audit:           auditor,
		Tables:          tableConverter{},
		OpenAPI:         docs,
		Logger:          log,
		ExternalAddress: addr,
		PodCIDRs:        cfg.ClusterCIDR,
		PodCIDRBits:     cfg.NodeCIDRMaskSize,
		Kubelet: &server.KubeletClient{
			HTTP: &http.Client{Transport: &http.Transport{
				// Like kube-apiserver without --kubelet-certificate-authority, the kubelet's
				// self-signed serving certificate is not verified; the token still is.
				TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
				TLSHandshakeTimeout: server.DefaultKubeletTimeout,
				DialContext:         (&net.Dialer{Timeout: server.DefaultKubeletTimeout}).DialContext,
			}},
			Token: adminToken(authn.static),
		},
	}), nil
}

// newHTTPS is the API's HTTPS server, listening already: a taken port fails the start.
func newHTTPS(cfg Config, paths *bootstrap.Paths, srv *server.Server, log *slog.Logger) (*run.HTTPServer, error) {
	cert, err := tls.LoadX509KeyPair(paths.ServingCert, paths.ServingKey)
	if err != nil {
		return nil, fmt.Errorf("load serving certificate: %w", err)
	}
	httpSrv := &http.Server{
		Addr:              net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)),
		Handler:           srv.Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// HTTP/1.1 only: Go's HTTP/2 server costs about twice the CPU per small request
		// (frames, flow control, a goroutine per stream), which bounds create throughput on
		// small machines; clients keep a pool of keep-alive connections instead.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	// Watches end as the shutdown begins; other requests have the drain period to finish.
	httpSrv.RegisterOnShutdown(srv.StopWatches)
	ln, err := net.Listen("tcp", httpSrv.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	// Streams (exec, attach, logs -f, port-forward) left after the drain period are closed.
	return &run.HTTPServer{Name: "https", Server: httpSrv, Listener: ln, TLS: true, Drain: cfg.ShutdownTimeout, Logger: log}, nil
}

// newAudit loads the audit policy and opens the log; nil when auditing is off.
func newAudit(cfg Config, log *slog.Logger) (*server.Audit, error) {
	if cfg.AuditPolicyFile == "" {
		return nil, nil
	}
	policy, err := audit.LoadPolicy(cfg.AuditPolicyFile)
	if err != nil {
		return nil, err
	}
	l := audit.NewLog(cfg.AuditLog, log.With("part", "audit"))
	server.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "apiserver_audit_event_dropped_total",
		Help: "Audit events dropped because the log's queue was full."}, func() float64 { return float64(l.Dropped()) }))
	return &server.Audit{Policy: policy, Log: l}, nil
}

// adminToken picks a system:masters token for the apiserver's own calls to kubelets.
func adminToken(tokens map[string]bootstrap.Identity) string {
	for tok, id := range tokens {
		for _, g := range id.Groups {
			if g == "system:masters" {
				return tok
			}
		}
	}
	return ""
}
