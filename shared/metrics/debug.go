package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServeDebug serves Go's profiles (/debug/pprof/) on addr until ctx ends. They have no
// authentication, so anything but a loopback address is warned about.
func ServeDebug(ctx context.Context, addr string, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug server: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("serving profiles", "address", l.Addr().String())
	if host, _, _ := net.SplitHostPort(addr); host != "localhost" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			log.Warn("profiles are served without authentication on a non-loopback address", "address", addr)
		}
	}
	select {
	case err := <-errc:
		return fmt.Errorf("debug server: %w", err)
	case <-ctx.Done():
		return srv.Close()
	}
}
