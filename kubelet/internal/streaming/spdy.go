package streaming

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"

	"minik8s.io/kubelet/internal/runtime"
)

// The SPDY remote command protocols, newest first. Over SPDY a client closes its stdin by
// closing the stream, so v5 adds nothing to v4 there; v3 adds the resize stream, v2 fixed v1's
// stream handling, and before v4 the error stream carries a message instead of a Status.
const (
	spdyV5 = "v5.channel.k8s.io"
	spdyV4 = "v4.channel.k8s.io"
	spdyV3 = "v3.channel.k8s.io"
	spdyV2 = "v2.channel.k8s.io"
	spdyV1 = "channel.k8s.io"
)

var spdyCommandProtocols = []string{spdyV5, spdyV4, spdyV3, spdyV2, spdyV1}

// maxPendingStreams bounds the streams a client may open before they are taken; more are
// refused, not queued without end.
const maxPendingStreams = 64

type newStream struct {
	s         httpstream.Stream
	replySent <-chan struct{}
}

// upgradeSPDY answers the SPDY upgrade and queues the streams the client opens. It returns
// nil after answering a failed upgrade.
func upgradeSPDY(w http.ResponseWriter, r *http.Request) (httpstream.Connection, <-chan newStream) {
	streams := make(chan newStream, maxPendingStreams)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		// Called on the connection's frame loop, which must not block.
		select {
		case streams <- newStream{s, replySent}:
			return nil
		default:
			return errors.New("too many streams waiting")
		}
	})
	return conn, streams
}

// commandStreams are a remote command's SPDY streams by type.
type commandStreams map[string]httpstream.Stream

func (s *Server) serveSPDYCommand(w http.ResponseWriter, r *http.Request, opts Options, run Runner) {
	protocol, err := httpstream.Handshake(r, w, spdyCommandProtocols)
	if err != nil {
		// Handshake has answered.
		s.log.Debug("exec protocol negotiation failed", "err", err)
		return
	}
	conn, pending := upgradeSPDY(w, r)
	if conn == nil {
		return
	}
	defer conn.Close()
	conn.SetIdleTimeout(s.cfg.IdleTimeout)

	want := map[string]bool{corev1.StreamTypeError: true}
	want[corev1.StreamTypeStdin] = opts.Stdin
	want[corev1.StreamTypeStdout] = opts.Stdout
	want[corev1.StreamTypeStderr] = opts.Stderr
	want[corev1.StreamTypeResize] = opts.TTY && protocol != spdyV2 && protocol != spdyV1
	got, err := s.awaitStreams(conn, pending, want)
	if err != nil {
		s.log.Debug("exec streams never came", "err", err)
		return
	}

	streams := runtime.Streams{TTY: opts.TTY}
	if st := got[corev1.StreamTypeStdin]; st != nil {
		streams.Stdin = st
	}
	if st := got[corev1.StreamTypeStdout]; st != nil {
		streams.Stdout = st
	}
	if st := got[corev1.StreamTypeStderr]; st != nil {
		streams.Stderr = st
	}
	stop := make(chan struct{})
	defer close(stop)
	if st := got[corev1.StreamTypeResize]; st != nil {
		streams.Resize = resizes(st, stop)
	}

	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	err = run(ctx, streams)
	if ctx.Err() != nil {
		s.log.Debug("exec client went away", "err", err)
		return
	}
	if err != nil {
		s.log.Debug("exec ended with an error", "err", err)
	}
	errStream := got[corev1.StreamTypeError]
	if werr := writeStatus(errStream, protocol, err); werr != nil {
		return
	}
	// Half-close every stream so the client reads their ends; Close of the connection then
	// resets what is left.
	for _, st := range got {
		_ = st.Close()
	}
}

// awaitStreams takes the streams the client opens until it has one of each type want says,
// and their replies are sent; it gives up after the creation timeout or when the connection
// closes.
func (s *Server) awaitStreams(conn httpstream.Connection, pending <-chan newStream, want map[string]bool) (commandStreams, error) {
	timer := time.NewTimer(s.cfg.CreationTimeout)
	defer timer.Stop()
	got := commandStreams{}
	var replies []<-chan struct{}
	missing := 0
	for _, w := range want {
		if w {
			missing++
		}
	}
	for missing > 0 {
		select {
		case ns := <-pending:
			typ := ns.s.Headers().Get(corev1.StreamType)
			switch {
			case !want[typ]:
				ns.s.Reset()
				return nil, fmt.Errorf("unexpected stream of type %q", typ)
			case got[typ] != nil:
				ns.s.Reset()
				return nil, fmt.Errorf("a second stream of type %q", typ)
			}
			got[typ] = ns.s
			replies = append(replies, ns.replySent)
			missing--
		case <-timer.C:
			return nil, fmt.Errorf("timed out after %s waiting for the client's streams", s.cfg.CreationTimeout)
		case <-conn.CloseChan():
			return nil, errors.New("connection closed while waiting for the client's streams")
		}
	}
	for _, reply := range replies {
		select {
		case <-reply:
		case <-timer.C:
			return nil, fmt.Errorf("timed out after %s replying to the client's streams", s.cfg.CreationTimeout)
		case <-conn.CloseChan():
			return nil, errors.New("connection closed while replying to the client's streams")
		}
	}
	return got, nil
}
