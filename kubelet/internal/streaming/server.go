package streaming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/runtime"
)

// Defaults of Config, the kubelet's.
const (
	DefaultIdleTimeout     = 4 * time.Hour
	DefaultCreationTimeout = 30 * time.Second
)

// Config tunes a Server.
type Config struct {
	// IdleTimeout closes a session in which nothing was sent either way for that long.
	IdleTimeout time.Duration
	// CreationTimeout bounds the wait for a SPDY client to open the streams it asked for.
	CreationTimeout time.Duration
	Logger          *slog.Logger
}

// Server serves exec, attach and port-forward sessions. Build it with New.
type Server struct {
	cfg Config
	log *slog.Logger
	// base is the parent of every session's context: the upgraded connections outlive their
	// requests' contexts, and an HTTP server's shutdown does not wait for them.
	base   context.Context
	cancel context.CancelFunc
}

// New returns a server; zero durations take the defaults.
func New(cfg Config) *Server {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.CreationTimeout <= 0 {
		cfg.CreationTimeout = DefaultCreationTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, log: cfg.Logger, base: base, cancel: cancel}
}

// Close ends every session: what runs in them is told to stop, and their connections close.
// Sessions that start later end at once.
func (s *Server) Close() { s.cancel() }

// Runner runs what a session is for (an exec, an attach) connected to streams, until it ends
// or ctx does, which happens when the client goes. Return an ExitError for a process that
// ended with a non-zero code.
type Runner func(ctx context.Context, streams runtime.Streams) error

// ExitError is a command's non-zero exit code, which clients report as their own.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("command terminated with exit code %d", e.Code) }

// Dialer connects to port on the loopback of the pod the session is for.
type Dialer func(ctx context.Context, port uint16) (net.Conn, error)

// ServeCommand upgrades an exec or attach request to a WebSocket or SPDY session, runs run
// with its streams and reports how it ended on the error stream. It answers a request that is
// neither with 400.
func (s *Server) ServeCommand(w http.ResponseWriter, r *http.Request, opts Options, run Runner) {
	switch {
	case isWebSocket(r):
		s.serveWebSocketCommand(w, r, opts, run)
	case isSPDY(r):
		s.serveSPDYCommand(w, r, opts, run)
	default:
		http.Error(w, "this endpoint needs a connection upgrade to WebSocket or SPDY/3.1, as kubectl makes", http.StatusBadRequest)
	}
}

// ServePortForward upgrades a port-forward request: SPDY, SPDY tunnelled in a WebSocket, or
// WebSocket channels for the ports in the query. Connections go through dial.
func (s *Server) ServePortForward(w http.ResponseWriter, r *http.Request, dial Dialer) {
	switch {
	case isWebSocket(r):
		s.serveWebSocketPortForward(w, r, dial)
	case isSPDY(r):
		s.serveSPDYPortForward(w, r, dial)
	default:
		http.Error(w, "this endpoint needs a connection upgrade to WebSocket or SPDY/3.1, as kubectl makes", http.StatusBadRequest)
	}
}

func isWebSocket(r *http.Request) bool {
	return headerHas(r, "Connection", "upgrade") && headerHas(r, "Upgrade", "websocket")
}

func isSPDY(r *http.Request) bool {
	return headerHas(r, "Connection", "upgrade") && headerHas(r, "Upgrade", "spdy/3.1")
}

func headerHas(r *http.Request, name, token string) bool {
	for _, v := range r.Header.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// status is how a session ended, as the error stream of v4 and later carries it.
func status(err error) metav1.Status {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}}
	var exit ExitError
	switch {
	case err == nil:
		st.Status = metav1.StatusSuccess
	case errors.As(err, &exit):
		st.Status = metav1.StatusFailure
		st.Reason = "NonZeroExitCode"
		st.Message = "command terminated with non-zero exit code: " + exit.Error()
		st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: "ExitCode", Message: strconv.Itoa(exit.Code)}}}
	default:
		st.Status = metav1.StatusFailure
		st.Code = http.StatusInternalServerError
		st.Reason = metav1.StatusReasonInternalError
		st.Message = "error executing command in container: " + err.Error()
		st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: err.Error()}}}
	}
	return st
}

// writeStatus reports how the session ended on the error stream: v4 and later as a Status,
// always; older protocols as the failure's message, and nothing on success.
func writeStatus(w io.Writer, protocol string, err error) error {
	if structuredStatus(protocol) {
		b, merr := json.Marshal(status(err))
		if merr != nil {
			return merr
		}
		_, werr := w.Write(b)
		return werr
	}
	if err == nil {
		return nil
	}
	_, werr := io.WriteString(w, status(err).Message)
	return werr
}

func structuredStatus(protocol string) bool {
	switch protocol {
	case protoV5, protoV4, protoV4Base64:
		return true
	}
	return false
}

// resizes decodes the terminal sizes a client sends as JSON objects ({"Width":80,"Height":24})
// into a channel, until r ends or stop is closed.
func resizes(r io.Reader, stop <-chan struct{}) <-chan runtime.TerminalSize {
	out := make(chan runtime.TerminalSize)
	go func() {
		dec := json.NewDecoder(r)
		for {
			var sz struct{ Width, Height uint16 }
			if err := dec.Decode(&sz); err != nil {
				return
			}
			select {
			case out <- runtime.TerminalSize{Width: sz.Width, Height: sz.Height}:
			case <-stop:
				return
			}
		}
	}()
	return out
}
