package streaming

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Port-forward WebSocket subprotocols: the SPDY tunnel, or channels, two per port in the
// order of the ports query (data 2i, error 2i+1), each opening with the port number as two
// little-endian bytes.
var portForwardProtocols = []string{protoTunnel, protoV4, protoV4Base64}

func (s *Server) serveWebSocketPortForward(w http.ResponseWriter, r *http.Request, dial Dialer) {
	protocol, ok := negotiate(w, r, portForwardProtocols)
	if !ok {
		return
	}
	var ports []uint16
	if protocol != protoTunnel {
		var err error
		if ports, err = Ports(r.URL.Query()); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	ws, err := upgrade(w, r, protocol)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return
	}
	if protocol == protoTunnel {
		s.serveTunnel(newTunnelConn(ws), dial)
		return
	}

	c := newChannelConn(ws, protocol, s.cfg.IdleTimeout)
	inputs := make([]io.Reader, len(ports))
	for i := range ports {
		inputs[i] = c.input(byte(2 * i))
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	readErr := make(chan error, 1)
	go func() {
		readErr <- c.run()
		cancel()
	}()
	for i, port := range ports {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], port)
		for _, ch := range []byte{byte(2 * i), byte(2*i + 1)} {
			if err := c.write(ch, b[:]); err != nil {
				c.abort()
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i, port := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := struct {
				io.Reader
				io.Writer
			}{inputs[i], c.output(byte(2 * i))}
			// Channels cannot be closed one by one here: the pod's end of every port's
			// connection ends the session, which tells the client.
			err := pipe(ctx, dial, port, data, func() error { return nil }, false)
			if err != nil && ctx.Err() == nil {
				_ = c.write(byte(2*i+1), fmt.Appendf(nil, "error forwarding port %d to the pod: %v", port, err))
			}
		}()
	}
	wg.Wait()
	c.closeInputs()
	select {
	case <-readErr:
		c.abort()
	default:
		c.close()
	}
}
