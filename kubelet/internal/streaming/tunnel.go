package streaming

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// tunnelConn is a WebSocket as a net.Conn: what is written goes out as one binary message,
// and reads run through the binary messages received as one byte stream.
type tunnelConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	rmu  sync.Mutex
	cur  io.Reader // the message being read
	once sync.Once
}

var _ net.Conn = (*tunnelConn)(nil)

func newTunnelConn(ws *websocket.Conn) *tunnelConn { return &tunnelConn{ws: ws} }

func (t *tunnelConn) Read(p []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	for {
		if t.cur == nil {
			kind, r, err := t.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			if kind != websocket.BinaryMessage {
				return 0, errors.New("tunnel: a text message where only binary ones carry the stream")
			}
			t.cur = r
		}
		n, err := t.cur.Read(p)
		if errors.Is(err, io.EOF) {
			t.cur = nil
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (t *tunnelConn) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close says goodbye with a normal close frame, then drops the connection.
func (t *tunnelConn) Close() error {
	t.once.Do(func() {
		_ = t.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	})
	return t.ws.Close()
}

func (t *tunnelConn) LocalAddr() net.Addr                { return t.ws.LocalAddr() }
func (t *tunnelConn) RemoteAddr() net.Addr               { return t.ws.RemoteAddr() }
func (t *tunnelConn) SetReadDeadline(d time.Time) error  { return t.ws.SetReadDeadline(d) }
func (t *tunnelConn) SetWriteDeadline(d time.Time) error { return t.ws.SetWriteDeadline(d) }

func (t *tunnelConn) SetDeadline(d time.Time) error {
	return errors.Join(t.ws.SetReadDeadline(d), t.ws.SetWriteDeadline(d))
}
