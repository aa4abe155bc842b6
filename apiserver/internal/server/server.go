package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/apiserver/internal/admission/webhook"
	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/metricsource"
	"minik8s.io/apiserver/internal/openapi"
	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/serviceaccount"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/kubeletclient"
	"minik8s.io/shared/scheme"
)

// Identity is who made a request, from the bearer token (or whom it impersonates).
type Identity = authorizer.User

type identityKey struct{}

// IdentityFrom returns the authenticated caller of a request's context.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Authenticator maps a bearer token to an identity; false refuses it with a 401.
type Authenticator func(ctx context.Context, token string) (Identity, bool)

// TableConverter renders objects or lists as a meta.k8s.io/v1 Table.
type TableConverter interface {
	Convert(obj runtime.Object, includeObject string, now time.Time) (*metav1.Table, error)
}

// Config is what a Server needs.
type Config struct {
	Store         storage.Interface
	Authenticator Authenticator
	Tables        TableConverter
	// OpenAPI are the OpenAPI documents of the built-in kinds, served at GET /openapi/v3 (and
	// below) and GET /openapi/v2 with those of the custom resources served at the time; nil
	// serves none.
	OpenAPI *openapi.Builtin
	Logger  *slog.Logger
	// Ready reports whether the server should answer /readyz with ok.
	Ready func(ctx context.Context) error
	// ExternalAddress is host:port clients reach the server at, for discovery.
	ExternalAddress string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// WatchBookmarkInterval spaces BOOKMARK events on watches that allow them.
	WatchBookmarkInterval time.Duration
	// PodCIDRs is the pod network, split into one /PodCIDRBits block per node; the default
	// network when not set.
	PodCIDRs    netip.Prefix
	PodCIDRBits int
	// Kubelet reaches node agents for pod logs, exec, attach and port-forward, and their
	// stats for metrics.k8s.io; nil disables them.
	Kubelet *KubeletClient
	// MetricsResolution is how often kubelets are scraped while resource metrics are asked
	// for (metricsource's default when zero).
	MetricsResolution time.Duration
	// Gateway reaches the serverless gateway for the invoke subresource of functions and
	// workflows; nil answers invoke with 503.
	Gateway *GatewayClient
	// NewAccess builds what authorizes requests and admits writes, over the server's registry
	// (src lists and watches it); nil allows every authenticated request.
	NewAccess func(src informer.Source) Access
	// Tokens issues and reviews ServiceAccount tokens; nil answers those requests with 503.
	Tokens *Tokens
	// Audit records requests; nil records none.
	Audit *Audit
}

// Server is the HTTP API. Build it with New; serve Handler().
type Server struct {
	cfg    Config
	store  storage.Interface
	reg    *registry.Registry
	log    *slog.Logger
	engine *gin.Engine
	// watching ends when the server begins to shut down (StopWatches), and every watch with
	// it, as kube-apiserver ends them: their clients watch again elsewhere or after the
	// restart, instead of holding the shutdown until its drain period is over.
	watching    context.Context
	stopWatches context.CancelFunc
	// metrics measures usage for metrics.k8s.io; nil without a kubelet client.
	metrics *metricsource.Source
	// access authorizes and admits; nil allows everything authenticated.
	access Access
	// webhooks is the admission webhooks: mutating ones in admit, validating ones in
	// admitValidated.
	webhooks *webhook.Plugin
	// proxyTransport reaches pods and services for their proxy subresource: HTTPS without
	// verifying the backend's certificate, as kube-apiserver's proxy transport.
	proxyTransport http.RoundTripper
}

// StopWatches ends every watch, now and from now on; the HTTP server calls it when its
// shutdown begins (http.Server.RegisterOnShutdown), so that requests under way drain while
// watches, which never end by themselves, do not hold the shutdown.
func (s *Server) StopWatches() { s.stopWatches() }

// New builds the server and its routes. It starts nothing.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WatchBookmarkInterval == 0 {
		cfg.WatchBookmarkInterval = time.Minute
	}
	gin.SetMode(gin.ReleaseMode)
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, proxyTransport: kubeletclient.NewHTTP(DefaultKubeletTimeout).Transport}
	s.watching, s.stopWatches = context.WithCancel(context.Background())
	s.webhooks = webhook.New(webhook.Config{Source: webhookSource{s}, Logger: loggerOr(cfg.Logger).With("part", "webhook"), Now: cfg.Now,
		Authorizer: celAuthorizer{s}})
	s.reg = registry.New(registry.Config{Store: cfg.Store, Logger: cfg.Logger, Now: cfg.Now, PodCIDRs: cfg.PodCIDRs,
		PodCIDRBits: cfg.PodCIDRBits, Admit: s.admit, AdmitValidated: s.admitValidated,
		Changed: func(k registry.Key) { s.webhooks.Changed(k.Resource.GVK.Group, k.Resource.Plural) }})
	if cfg.NewAccess != nil {
		s.access = cfg.NewAccess(s.reg.Source())
	}
	if cfg.Kubelet != nil {
		s.metrics = metricsource.New(metricsource.Config{HTTP: cfg.Kubelet.HTTP, Token: cfg.Kubelet.Token,
			Targets: s.kubeletTargets, Resolution: cfg.MetricsResolution, Timeout: DefaultKubeletTimeout,
			Logger: loggerOr(cfg.Logger).With("part", "metricsource")})
	}
	e := gin.New()
	e.HandleMethodNotAllowed = false
	e.Use(s.recoverer, s.instrument)
	e.GET("/healthz", s.healthz)
	e.GET("/livez", s.healthz)
	e.GET("/readyz", s.readyz)
	auth := e.Group("/", s.authenticate, s.audit, s.authorize)
	auth.GET("/version", s.version)
	auth.GET("/metrics", gin.WrapH(metricsHandler()))
	auth.GET("/api", s.apiVersions)
	auth.GET("/apis", s.apiGroups)
	if cfg.OpenAPI != nil {
		docs := openapi.NewLive(cfg.OpenAPI, s.reg)
		auth.GET("/openapi/v3", gin.WrapF(docs.ServeV3))
		auth.GET("/openapi/v3/*path", gin.WrapF(docs.ServeV3))
		auth.GET("/openapi/v2", gin.WrapF(docs.ServeV2))
		auth.HEAD("/openapi/v2", gin.WrapF(docs.ServeV2))
	}
	auth.GET(serviceaccount.OpenIDConfigPath, s.discoveryDocument(false))
	auth.GET(serviceaccount.JWKSPath, s.discoveryDocument(true))
	auth.Any("/api/v1", s.legacyResources)
	auth.Any("/api/v1/*path", s.resourceRequest)
	auth.Any("/apis/:group", s.apiGroup)
	auth.Any("/apis/:group/:version", s.groupResources)
	auth.Any("/apis/:group/:version/*path", s.resourceRequest)
	e.NoRoute(s.authenticate, s.audit, s.authorize, func(c *gin.Context) {
		writeError(c, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource"))
	})
	s.engine = e
	return s
}

// Access is what authorizes the server's requests, for the caller to run; nil without one.
func (s *Server) Access() Access { return s.access }

// Registry is the server's registry, for the apiserver's own loops.
func (s *Server) Registry() *registry.Registry { return s.reg }

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Start runs the background work of the registry (system namespaces, namespace
// finalization, default service accounts, address allocation repair) and the scraping of
// kubelets for resource metrics until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if s.metrics == nil {
		return s.reg.Start(ctx)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.metrics.Start(ctx)
	}()
	err := s.reg.Start(ctx)
	<-done
	return err
}

func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				// A proxied stream whose client went away: net/http ends the connection.
				panic(r)
			}
			s.log.Error("panic serving request", "path", c.Request.URL.Path, "panic", r)
			writeError(c, apierror.New(apierror.ErrInternal, "internal error"))
		}
	}()
	c.Next()
}

func (s *Server) authenticate(c *gin.Context) {
	token, ok := bearerToken(c.GetHeader("Authorization"))
	if !ok || s.cfg.Authenticator == nil {
		writeError(c, apierror.New(apierror.ErrUnauthorized, "Unauthorized"))
		return
	}
	id, ok := s.cfg.Authenticator(c.Request.Context(), token)
	if !ok {
		writeError(c, apierror.New(apierror.ErrUnauthorized, "Unauthorized"))
		return
	}
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), identityKey{}, id))
	c.Next()
}

// bearerToken reads "Bearer <token>" with the scheme in any case, as Kubernetes does (the
// Python client sends "bearer").
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (s *Server) healthz(c *gin.Context) { c.String(http.StatusOK, "ok") }

func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.Revision(ctx); err != nil {
		c.String(http.StatusServiceUnavailable, "storage not ready: %v", err)
		return
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			c.String(http.StatusServiceUnavailable, "not ready: %v", err)
			return
		}
	}
	c.String(http.StatusOK, "ok")
}

// resourceRequest handles every path below /api/v1/ and /apis/<group>/<version>/.
func (s *Server) resourceRequest(c *gin.Context) {
	gv := schema.GroupVersion{Group: c.Param("group"), Version: c.Param("version")}
	if gv.Group == "" {
		gv.Version = "v1"
	}
	path := strings.Trim(c.Param("path"), "/")
	if gv == metricsGV && path != "" {
		s.resourceMetrics(c, path)
		return
	}
	if (gv == authenticationGV || gv == authorizationGV) && s.review(c, gv, path) {
		return
	}
	if path == "" {
		s.resourceList(c, gv)
		return
	}
	t, err := parseResourcePath(s.reg, gv, strings.Split(path, "/"))
	if err != nil {
		writeError(c, err)
		return
	}
	c.Set(resourceKey, t.res.Plural)
	if t.res.Custom {
		s.warnDeprecated(c, t.res)
	}
	s.dispatch(c, t)
}

// warnDeprecated tells the client, as a Warning header, that the custom resource version it
// uses is deprecated, in its definition's words or Kubernetes' default ones.
func (s *Server) warnDeprecated(c *gin.Context, res *scheme.Resource) {
	crd, ok := s.reg.Definition(res.GVR())
	if !ok {
		return
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != res.GVK.Version || !v.Deprecated {
			continue
		}
		msg := fmt.Sprintf("%s %s is deprecated", res.GVK.GroupVersion(), res.GVK.Kind)
		if v.DeprecationWarning != nil {
			msg = *v.DeprecationWarning
		}
		c.Writer.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}

const resourceKey = "minik8s.resource"
const verbKey = "minik8s.verb"

func (s *Server) dispatch(c *gin.Context, t target) {
	m := c.Request.Method
	verb := ""
	defer func() { c.Set(verbKey, verb) }()
	switch t.subresource {
	case "":
	case "status", "ephemeralcontainers":
		switch m {
		case http.MethodGet:
			verb = "get"
			s.get(c, t)
		case http.MethodPut:
			verb = "update"
			s.update(c, t)
		case http.MethodPatch:
			verb = "patch"
			s.patch(c, t)
		default:
			s.methodNotAllowed(c, m, t)
		}
		return
	case "token":
		verb = "create"
		if m != http.MethodPost {
			s.methodNotAllowed(c, m, t)
			return
		}
		s.tokenRequest(c, t)
		return
	case "binding", "eviction":
		verb = "create"
		if m != http.MethodPost {
			s.methodNotAllowed(c, m, t)
			return
		}
		if t.subresource == "binding" {
			s.bind(c, t)
		} else {
			s.evict(c, t)
		}
		return
	case "scale":
		s.scale(c, t, &verb)
		return
	case "log":
		verb = "get"
		if m != http.MethodGet {
			s.methodNotAllowed(c, m, t)
			return
		}
		s.podLog(c, t)
		return
	case "invoke":
		verb = "create"
		if m != http.MethodPost {
			s.methodNotAllowed(c, m, t)
			return
		}
		s.invoke(c, t)
		return
	case "proxy":
		verb = "connect"
		if !proxyMethods[m] {
			s.methodNotAllowed(c, m, t)
			return
		}
		s.proxy(c, t)
		return
	case "exec", "attach", "portforward":
		verb = "create"
		if m != http.MethodGet && m != http.MethodPost {
			s.methodNotAllowed(c, m, t)
			return
		}
		s.podStream(c, t)
		return
	}
	switch {
	case m == http.MethodGet && t.name == "":
		opts, err := listOptions(c)
		if err != nil {
			writeError(c, err)
			return
		}
		if opts.Watch {
			verb = "watch"
			s.watch(c, t, opts)
			return
		}
		verb = "list"
		s.list(c, t, opts)
	case m == http.MethodGet:
		verb = "get"
		s.get(c, t)
	case m == http.MethodPost && t.name == "":
		verb = "create"
		s.create(c, t)
	case m == http.MethodPut && t.name != "":
		verb = "update"
		s.update(c, t)
	case m == http.MethodPatch && t.name != "":
		verb = "patch"
		s.patch(c, t)
	case m == http.MethodDelete && t.name != "":
		verb = "delete"
		s.delete(c, t)
	case m == http.MethodDelete && t.res.DeleteCollection:
		verb = "deletecollection"
		s.deleteCollection(c, t)
	default:
		s.methodNotAllowed(c, m, t)
	}
}

func (s *Server) methodNotAllowed(c *gin.Context, method string, t target) {
	writeError(c, apierror.New(apierror.ErrMethodNotAllowed, "the server does not allow this method on the requested resource (%s %s)", method, t.res.Plural))
}

// loggerOr is log, or one that discards when there is none.
func loggerOr(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
