package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"minik8s.io/shared/run"
)

// DefaultPort is where a workload listens when $PORT is unset; manifests' containerPort says 8080.
const DefaultPort = 8080

// shutdownTimeout bounds draining so a pod stops well inside the default 30 s grace period.
const shutdownTimeout = 5 * time.Second

// Addr returns the listen address from $PORT, or :8080.
func Addr(getenv func(string) string) (string, error) {
	p := getenv("PORT")
	if p == "" {
		return fmt.Sprintf(":%d", DefaultPort), nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("PORT %q: want a number 1-65535", p)
	}
	return fmt.Sprintf(":%d", n), nil
}

// ShutdownDelay reads $SHUTDOWN_DELAY (a Go duration such as "3s"; unset is 0): how long a
// workload keeps serving after it is told to stop. Kubernetes removes a terminating pod from
// its Services while its containers get SIGTERM; a pod that stops listening at once refuses
// the connections the nodes still send it until they have seen the change, so workloads
// behind a Service that rolls without errors set it (what a preStop sleep does elsewhere).
func ShutdownDelay(getenv func(string) string) (time.Duration, error) {
	v := getenv("SHUTDOWN_DELAY")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("SHUTDOWN_DELAY %q: want a duration such as 3s", v)
	}
	return d, nil
}

// Run serves h on addr until ctx is done, keeps serving for delay more, then drains in-flight
// requests for a bounded time.
func Run(ctx context.Context, logger *slog.Logger, addr string, h http.Handler, delay time.Duration) error {
	srv := &run.HTTPServer{Name: "workload", Logger: logger, Linger: delay, Drain: shutdownTimeout,
		Server: &http.Server{
			Addr:              addr,
			Handler:           Logged(logger, h),
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// Logged logs one line per request after it is answered.
func Logged(logger *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		logger.Info("request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
			"status", rec.status, "bytes", rec.bytes, "duration", time.Since(start))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer (Flush for streamed answers).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Logger returns the workloads' logger: text lines on stdout, which the runtime keeps as the
// container log.
func Logger(component string) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stdout, nil)).With("component", component)
}
