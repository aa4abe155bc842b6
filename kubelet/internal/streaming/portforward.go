package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// portForwardProtocol is the SPDY port-forward protocol: per forwarded connection the client
// opens an error stream and a data stream with the same port and requestID headers.
const portForwardProtocol = "portforward.k8s.io"

func (s *Server) serveSPDYPortForward(w http.ResponseWriter, r *http.Request, dial Dialer) {
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		s.log.Debug("port-forward protocol negotiation failed", "err", err)
		return
	}
	conn, pending := upgradeSPDY(w, r)
	if conn == nil {
		return
	}
	s.forward(conn, pending, dial)
}

// forward serves one SPDY port-forward connection until it closes or idles out, then closes
// it and waits for its forwards to end.
func (s *Server) forward(conn httpstream.Connection, pending <-chan newStream, dial Dialer) {
	defer conn.Close()
	conn.SetIdleTimeout(s.cfg.IdleTimeout)
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	pairs := map[string]*streamPair{}
	expired := make(chan string)
	for {
		select {
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		case ns := <-pending:
			key, err := pairKey(ns.s)
			if err != nil {
				s.log.Debug("port-forward stream refused", "err", err)
				ns.s.Reset()
				continue
			}
			p := pairs[key]
			if p == nil {
				p = &streamPair{}
				pairs[key] = p
				p.timer = time.AfterFunc(s.cfg.CreationTimeout, func() {
					select {
					case expired <- key:
					case <-ctx.Done():
					}
				})
			}
			if err := p.add(ns); err != nil {
				s.log.Debug("port-forward stream refused", "err", err)
				ns.s.Reset()
				continue
			}
			if p.complete() {
				p.timer.Stop()
				delete(pairs, key)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer conn.RemoveStreams(p.data.s, p.errs.s)
					s.forwardPair(ctx, p, dial)
				}()
			}
		case key := <-expired:
			p := pairs[key]
			if p == nil {
				continue
			}
			delete(pairs, key)
			if p.errs.s != nil {
				fmt.Fprintf(p.errs.s, "timed out waiting for the other stream of request %s", key)
				p.errs.s.Close()
			}
			for _, st := range []httpstream.Stream{p.data.s, p.errs.s} {
				if st != nil {
					st.Reset()
					conn.RemoveStreams(st)
				}
			}
		}
	}
}

// pairKey is what pairs a data stream with its error stream: the requestID header; clients
// too old to send one open the error stream and then the data stream, two ids apart.
func pairKey(st httpstream.Stream) (string, error) {
	typ := st.Headers().Get(corev1.StreamType)
	if typ != corev1.StreamTypeData && typ != corev1.StreamTypeError {
		return "", fmt.Errorf("stream type %q is neither %q nor %q", typ, corev1.StreamTypeData, corev1.StreamTypeError)
	}
	if id := st.Headers().Get(corev1.PortForwardRequestIDHeader); id != "" {
		return id, nil
	}
	id := st.Identifier()
	if typ == corev1.StreamTypeData {
		id -= 2
	}
	return strconv.FormatUint(uint64(id), 10), nil
}

type streamPair struct {
	data, errs newStream
	timer      *time.Timer
}

func (p *streamPair) add(ns newStream) error {
	slot := &p.data
	if ns.s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
		slot = &p.errs
	}
	if slot.s != nil {
		return errors.New("a second stream of the same type and request")
	}
	*slot = ns
	return nil
}

func (p *streamPair) complete() bool { return p.data.s != nil && p.errs.s != nil }

// forwardPair connects the data stream to the pod's port; what goes wrong goes to the error
// stream, whose end tells the client this connection is over.
func (s *Server) forwardPair(ctx context.Context, p *streamPair, dial Dialer) {
	defer p.data.s.Close()
	defer p.errs.s.Close()
	for _, reply := range []<-chan struct{}{p.data.replySent, p.errs.replySent} {
		select {
		case <-reply:
		case <-ctx.Done():
			return
		}
	}
	header := p.data.s.Headers().Get(corev1.PortHeader)
	port, err := parsePort(header)
	if err != nil {
		fmt.Fprintf(p.errs.s, "invalid port header %q: %v", header, err)
		// Reset, not just closed: data the client still sends to an unread stream would stall
		// the connection's frame handling, and with it other streams.
		p.data.s.Reset()
		return
	}
	if err := pipe(ctx, dial, port, p.data.s, p.data.s.Close, true); err != nil {
		fmt.Fprintf(p.errs.s, "error forwarding port %d to the pod: %v", port, err)
		p.data.s.Reset()
	}
}

// pipe dials port and copies both ways between the connection and the client's rw: the
// client's end half-closes the pod's connection, the pod's end calls closeClient. It returns
// when ctx is done or the pod's side has ended and, with waitClient, the client's too (a
// protocol that cannot tell the client this connection's end cannot wait for its answer).
func pipe(ctx context.Context, dial Dialer, port uint16, rw io.ReadWriter, closeClient func() error, waitClient bool) error {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err := dial(dctx, port)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	fromClient := make(chan struct{})
	go func() {
		defer close(fromClient)
		if _, err := io.Copy(c, rw); err == nil {
			closeWrite(c)
			return
		}
		// The pod's side is gone, but what the client still sends must be read: a stream
		// nobody reads holds up its whole connection.
		_, _ = io.Copy(io.Discard, rw)
	}()
	_, copyErr := io.Copy(rw, c)
	_ = closeClient()
	if waitClient {
		select {
		case <-fromClient:
		case <-ctx.Done():
		}
	}
	if copyErr != nil && ctx.Err() == nil && !errors.Is(copyErr, net.ErrClosed) {
		return copyErr
	}
	return nil
}

// dialTimeout bounds a connection to a pod's port; on the pod's loopback it is immediate.
const dialTimeout = 30 * time.Second

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// serveTunnel runs SPDY port-forwarding inside a WebSocket, each binary message carrying the
// next bytes of the SPDY connection, for clients whose path to the kubelet passes only
// WebSockets.
func (s *Server) serveTunnel(ws *tunnelConn, dial Dialer) {
	streams := make(chan newStream, maxPendingStreams)
	conn, err := spdy.NewServerConnection(ws, func(st httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case streams <- newStream{st, replySent}:
			return nil
		default:
			return errors.New("too many streams waiting")
		}
	})
	if err != nil {
		s.log.Debug("SPDY over WebSocket failed", "err", err)
		ws.Close()
		return
	}
	s.forward(conn, streams, dial)
}
