package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"minik8s.io/shared/run"
)

// Serve serves the metrics of g at /metrics and "ok" at /healthz on addr until ctx ends, then
// shuts the server down, giving scrapes under way 5 seconds. A port it cannot bind is an
// error at once.
func Serve(ctx context.Context, addr string, g prometheus.Gatherer, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &run.HTTPServer{Name: "metrics", Logger: log,
		Server: &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	return srv.Start(ctx)
}

// ValidateAddress checks a --metrics-address flag: empty (off) or host:port.
func ValidateAddress(flag, addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	return nil
}
