package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DefaultDrain is how long HTTPServer waits for requests under way when Drain is zero.
const DefaultDrain = 5 * time.Second

// HTTPServer is a Runnable serving an http.Server until its context ends, then shutting it
// down: it stops accepting, waits up to Drain for requests under way, and closes what is left
// (watches and streams never end by themselves).
type HTTPServer struct {
	// Name labels logs and errors ("metrics", "gateway", "https").
	Name   string
	Server *http.Server
	// Listener is served; nil listens on Server.Addr when started. Listening before the run
	// group starts makes a taken port an error of the component's start.
	Listener net.Listener
	// TLS serves TLS with Server.TLSConfig's certificates.
	TLS bool
	// Linger keeps serving this long after the context ends, before draining: a workload
	// behind a Service keeps answering until its endpoint is gone from every node.
	Linger time.Duration
	Drain  time.Duration
	Logger *slog.Logger
}

// Start implements Runnable.
func (s *HTTPServer) Start(ctx context.Context) error {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	ln := s.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.Server.Addr); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	errc := make(chan error, 1)
	go func() {
		if s.TLS {
			errc <- s.Server.ServeTLS(ln, "", "")
			return
		}
		errc <- s.Server.Serve(ln)
	}()
	log.Info("serving", "server", s.Name, "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("%s: %w", s.Name, err)
	case <-ctx.Done():
	}
	if s.Linger > 0 {
		log.Info("serving on for the linger period", "server", s.Name, "linger", s.Linger)
		select {
		case err := <-errc:
			return fmt.Errorf("%s: %w", s.Name, err)
		case <-time.After(s.Linger):
		}
	}
	drain := s.Drain
	if drain <= 0 {
		drain = DefaultDrain
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	err := s.Server.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.Server.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: shutdown: %w", s.Name, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}
