package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"minik8s.io/dashboard/internal/prom"
	"minik8s.io/dashboard/internal/web"
)

// Config is the dashboard's flags.
type Config struct {
	Listen string
	// Kubeconfig, when set, is used instead of the in-cluster config (running outside a pod).
	Kubeconfig string
	// PrometheusURL is Prometheus' address; empty means through the apiserver's services
	// proxy to PrometheusService ("namespace/name:port").
	PrometheusURL     string
	PrometheusService string
	ChartJS           string
	Refresh           time.Duration
}

// Validate reports the first unusable setting.
func (c Config) Validate() error {
	if c.Listen == "" {
		return errors.New("--listen is empty")
	}
	if c.PrometheusURL == "" && c.PrometheusService == "" {
		return errors.New("one of --prometheus-url and --prometheus-service is needed")
	}
	if c.Refresh < time.Second {
		return fmt.Errorf("--refresh %s is under a second", c.Refresh)
	}
	return nil
}

// shutdownTimeout bounds the wait for requests in flight when the dashboard stops.
const shutdownTimeout = 5 * time.Second

// Run serves the dashboard until ctx ends.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if _, err := os.Stat(cfg.ChartJS); err != nil {
		return fmt.Errorf("chart.js: %w", err)
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = "minik8s-dashboard"
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	metrics, err := prometheus(cfg, rc)
	if err != nil {
		return err
	}
	srv, err := web.New(web.Config{Kube: kube, Dynamic: dyn, Metrics: metrics, ChartJS: cfg.ChartJS, Refresh: cfg.Refresh, Logger: logger})
	if err != nil {
		return err
	}
	hs := &http.Server{Addr: cfg.Listen, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("serving", "address", ln.Addr().String(), "prometheus", metrics.Base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return rc, nil
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	return rc, nil
}

// prometheus returns a client of Prometheus at its URL or, without one, through the
// apiserver's services proxy with the dashboard's own credentials.
func prometheus(cfg Config, rc *rest.Config) (*prom.Client, error) {
	if cfg.PrometheusURL != "" {
		return prom.New(cfg.PrometheusURL, &http.Client{Timeout: 30 * time.Second}), nil
	}
	ns, svc, ok := cutService(cfg.PrometheusService)
	if !ok {
		return nil, fmt.Errorf("--prometheus-service %q: want namespace/name:port", cfg.PrometheusService)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("apiserver transport: %w", err)
	}
	hc.Timeout = 30 * time.Second
	base := rc.Host + "/api/v1/namespaces/" + ns + "/services/" + svc + "/proxy"
	return prom.New(base, hc), nil
}

func cutService(s string) (string, string, bool) {
	ns, svc, ok := strings.Cut(s, "/")
	return ns, svc, ok && ns != "" && svc != ""
}
