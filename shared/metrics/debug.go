package metrics

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"minik8s.io/shared/run"
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
	if host, _, _ := net.SplitHostPort(addr); host != "localhost" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			log.Warn("profiles are served without authentication on a non-loopback address", "address", addr)
		}
	}
	// A profile under way is cut short at shutdown: nobody waits for one.
	srv := &run.HTTPServer{Name: "debug", Logger: log, Drain: time.Millisecond,
		Server: &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	return srv.Start(ctx)
}
