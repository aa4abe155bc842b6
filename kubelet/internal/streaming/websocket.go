package streaming

import (
	"context"
	"net/http"

	"minik8s.io/kubelet/internal/runtime"
)

// Channels of the remote command protocols.
const (
	chStdin  = 0
	chStdout = 1
	chStderr = 2
	chError  = 3
	chResize = 4
)

var commandProtocols = []string{protoV5, protoV4, protoV4Base64, protoV1, protoV1Base64}

func (s *Server) serveWebSocketCommand(w http.ResponseWriter, r *http.Request, opts Options, run Runner) {
	protocol, ok := negotiate(w, r, commandProtocols)
	if !ok {
		return
	}
	ws, err := upgrade(w, r, protocol)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return
	}
	c := newChannelConn(ws, protocol, s.cfg.IdleTimeout)
	streams := runtime.Streams{TTY: opts.TTY}
	if opts.Stdin {
		streams.Stdin = c.input(chStdin)
	}
	if opts.Stdout {
		streams.Stdout = c.output(chStdout)
	}
	if opts.Stderr {
		streams.Stderr = c.output(chStderr)
	}
	stop := make(chan struct{})
	defer close(stop)
	if opts.TTY {
		streams.Resize = resizes(c.input(chResize), stop)
	}

	// The hijacked connection outlives the request's context; the client's going is what
	// ends the session early.
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	readErr := make(chan error, 1)
	go func() {
		readErr <- c.run()
		cancel()
	}()

	// An empty message on the first channel the client reads tells it the session is up.
	first := byte(chError)
	switch {
	case opts.Stdout:
		first = chStdout
	case opts.Stderr:
		first = chStderr
	}
	if err := c.write(first, nil); err != nil {
		c.abort()
		return
	}

	err = run(ctx, streams)
	c.closeInputs()
	select {
	case rerr := <-readErr:
		// The client went first; there is no one to report to.
		s.log.Debug("exec client went away", "err", rerr)
		c.abort()
		return
	default:
	}
	if err != nil {
		s.log.Debug("exec ended with an error", "err", err)
	}
	if werr := writeStatus(c.output(chError), protocol, err); werr != nil {
		c.abort()
		return
	}
	c.close()
}
