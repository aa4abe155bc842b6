package streaming

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// The WebSocket subprotocols of the channel family. Each message carries one channel's data
// behind its number: a byte in the binary ones, an ASCII digit before base64 text in the
// base64 ones. v4 ends exec with a Status on the error channel; v5 adds the close signal, a
// message [255, channel] saying the sender is done with that channel.
const (
	protoV5       = "v5.channel.k8s.io"
	protoV4       = "v4.channel.k8s.io"
	protoV4Base64 = "v4.base64.channel.k8s.io"
	protoV1       = "channel.k8s.io"
	protoV1Base64 = "base64.channel.k8s.io"
	// protoTunnel carries SPDY/3.1 port-forwarding in binary messages.
	protoTunnel = "SPDY/3.1+portforward.k8s.io"
)

// closeSignal opens a v5 message closing the channel numbered by its second byte.
const closeSignal = 255

// closeWait bounds how long a closing server waits for the client's close frame, and one write
// of a close frame.
const closeWait = 10 * time.Second

// negotiate picks the first subprotocol the client asks for that supported has, in the
// client's order of preference. A client that asks for none gets "" (the binary channel
// protocol), as from the kubelet. ok is false when it asked only for unknown ones, after a
// 400 naming what is supported.
func negotiate(w http.ResponseWriter, r *http.Request, supported []string) (string, bool) {
	asked := websocket.Subprotocols(r)
	if len(asked) == 0 {
		return "", true
	}
	for _, p := range asked {
		if slices.Contains(supported, p) {
			return p, true
		}
	}
	http.Error(w, "unable to upgrade: none of the WebSocket subprotocols "+quoteAll(asked)+
		" is supported; supported are "+quoteAll(supported), http.StatusBadRequest)
	return "", false
}

func quoteAll(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += `"` + s + `"`
	}
	return out
}

// upgrade switches the request to a WebSocket speaking protocol. Callers authenticate with a
// bearer token, not a cookie, so there is no cross-site request to guard against by Origin.
func upgrade(w http.ResponseWriter, r *http.Request, protocol string) (*websocket.Conn, error) {
	u := websocket.Upgrader{
		HandshakeTimeout: closeWait,
		ReadBufferSize:   32 << 10,
		WriteBufferSize:  32 << 10,
		CheckOrigin:      func(*http.Request) bool { return true },
	}
	if protocol != "" {
		u.Subprotocols = []string{protocol}
	}
	// Upgrade answers a failed handshake itself.
	return u.Upgrade(w, r, nil)
}

// channelConn is one WebSocket speaking a channel protocol. Inputs are the channels the client
// writes to, registered before Run; outputs are written with write.
type channelConn struct {
	ws     *websocket.Conn
	base64 bool
	// closable says the protocol has the close signal.
	closable bool
	idle     time.Duration

	wmu    sync.Mutex
	inputs map[byte]*input
	done   chan struct{} // closed when the read loop has ended
}

type input struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func newChannelConn(ws *websocket.Conn, protocol string, idle time.Duration) *channelConn {
	// A ping is traffic too, as on SPDY: a client that pings is there, whatever it sends.
	ws.SetPingHandler(func(data string) error {
		_ = ws.SetReadDeadline(time.Now().Add(idle))
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(closeWait))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	return &channelConn{
		ws:       ws,
		base64:   protocol == protoV4Base64 || protocol == protoV1Base64,
		closable: protocol == protoV5,
		idle:     idle,
		inputs:   map[byte]*input{},
		done:     make(chan struct{}),
	}
}

// input registers channel ch as one the client writes to and returns what it writes. Call it
// before run.
func (c *channelConn) input(ch byte) io.Reader {
	pr, pw := io.Pipe()
	c.inputs[ch] = &input{r: pr, w: pw}
	return pr
}

// output is a writer of channel ch.
func (c *channelConn) output(ch byte) io.Writer { return channelWriter{c: c, ch: ch} }

type channelWriter struct {
	c  *channelConn
	ch byte
}

func (w channelWriter) Write(p []byte) (int, error) {
	if err := w.c.write(w.ch, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// write sends p as one message on channel ch. Writes do not block past the idle timeout: a
// client that stopped reading that long is gone.
func (c *channelConn) write(ch byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return err
	}
	kind, msg := websocket.BinaryMessage, make([]byte, 0, 1+len(p))
	if c.base64 {
		kind = websocket.TextMessage
		msg = append(msg, '0'+ch)
		msg = base64.StdEncoding.AppendEncode(msg, p)
	} else {
		msg = append(append(msg, ch), p...)
	}
	return c.ws.WriteMessage(kind, msg)
}

// run reads the client's messages into the inputs until the connection ends or is idle for
// the idle timeout, then ends every input: with EOF after a normal close, else with the error.
func (c *channelConn) run() error {
	defer close(c.done)
	err := c.read()
	end := err
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
		end = nil
	}
	for _, in := range c.inputs {
		in.w.CloseWithError(end)
	}
	return err
}

func (c *channelConn) read() error {
	for {
		if err := c.ws.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
			return err
		}
		kind, msg, err := c.ws.ReadMessage()
		if err != nil {
			return err
		}
		if len(msg) == 0 {
			continue
		}
		ch, payload := msg[0], msg[1:]
		if c.base64 {
			if kind != websocket.TextMessage || ch < '0' || ch > '9' {
				continue
			}
			ch -= '0'
			if payload, err = base64.StdEncoding.DecodeString(string(payload)); err != nil {
				continue
			}
		}
		if c.closable && ch == closeSignal {
			if len(payload) > 0 {
				if in := c.inputs[payload[0]]; in != nil {
					in.w.Close()
				}
			}
			continue
		}
		in := c.inputs[ch]
		if in == nil {
			continue
		}
		// Blocks until the reader takes it, which holds the client back; a reader that has
		// gone (closeInputs) makes the data vanish instead.
		_, _ = in.w.Write(payload)
	}
}

// closeInputs makes reads of the inputs end, and data arriving for them be dropped.
func (c *channelConn) closeInputs() {
	for _, in := range c.inputs {
		in.r.CloseWithError(io.ErrClosedPipe)
	}
}

// close ends the session the way clients expect: a normal close frame, the client's answer (or
// closeWait), then the connection.
func (c *channelConn) close() {
	c.wmu.Lock()
	err := c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(closeWait))
	c.wmu.Unlock()
	if err == nil {
		t := time.NewTimer(closeWait)
		select {
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
	c.ws.Close()
}

// abort drops the connection at once: the client has gone or broke the protocol.
func (c *channelConn) abort() { c.ws.Close() }
