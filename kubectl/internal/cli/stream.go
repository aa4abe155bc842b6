package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apihttpstream "k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"minik8s.io/shared/client"
)

// streamURL is the apiserver URL of a pod's exec, attach or portforward subresource.
func streamURL(cfg *rest.Config, pod *corev1.Pod, subresource string, query url.Values) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(cfg.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", cfg.Host, err)
	}
	p, err := client.ResourcePath(podResource(), pod.Namespace, pod.Name, subresource)
	if err != nil {
		return nil, err
	}
	u.Path += p
	u.RawQuery = query.Encode()
	return u, nil
}

// streamQuery is the query of an exec or attach: which streams to open, and the container.
func streamQuery(container string, stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	q.Set("container", container)
	for name, on := range map[string]bool{"stdin": stdin, "stdout": stdout, "stderr": stderr, "tty": tty} {
		if on {
			q.Set(name, "true")
		}
	}
	return q
}

// shouldFallback is kubectl's rule for leaving WebSockets for SPDY: the upgrade was refused
// (an older server, a proxy that drops WebSockets) or an HTTPS proxy the WebSocket dialer
// cannot use. client-go reports upgrade failures with either package's error type.
func shouldFallback(err error) bool {
	return streamhttp.IsUpgradeFailure(err) || apihttpstream.IsUpgradeFailure(err) ||
		streamhttp.IsHTTPSProxyError(err)
}

// runStream runs an exec or attach session at u: WebSocket (v5 down to v1) first and SPDY
// when the WebSocket upgrade is refused, as kubectl does.
func runStream(ctx context.Context, cfg *rest.Config, u *url.URL, so remotecommand.StreamOptions) error {
	spdyExec, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return err
	}
	// RFC 6455 opens a WebSocket with GET.
	wsExec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return err
	}
	var refused *apierrors.StatusError
	exec, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, func(err error) bool {
		if !shouldFallback(err) {
			return false
		}
		refused = refusal(err)
		return true
	})
	if err != nil {
		return err
	}
	err = exec.StreamWithContext(ctx, so)
	// The apiserver refuses a bad request (an unknown container, a pod that is not running)
	// with a Status before any upgrade. The WebSocket client keeps it; the SPDY client now
	// flattens it into "unable to upgrade connection: ...". kubectl v1.32 reported the
	// Status itself ("Error from server (BadRequest): ..."), and so do we.
	if err != nil && refused != nil && strings.HasPrefix(err.Error(), "unable to upgrade connection") {
		return refused
	}
	return err
}

// refusal is the Status the server refused a WebSocket upgrade with, if it sent one with a
// message.
func refusal(err error) *apierrors.StatusError {
	var uf *streamhttp.UpgradeFailureError
	if !errors.As(err, &uf) {
		return nil
	}
	var se *apierrors.StatusError
	if !errors.As(uf.Cause, &se) || se.ErrStatus.Message == "" {
		return nil
	}
	return se
}

// sessionIO is the local end of an exec or attach: what is sent and where output goes, and
// the terminal when the session is interactive.
type sessionIO struct {
	in          io.Reader // nil: no stdin stream
	out, errOut io.Writer // errOut nil: no stderr stream (a TTY merges it into stdout)
	tty         bool
	term        *terminal // set when tty: the local terminal, put in raw mode
	// nudge makes the first size sent one larger than the terminal, so a program that drew
	// its screen before we attached redraws it.
	nudge bool
}

// setupSession applies kubectl's rules: a TTY only with stdin, and only when stdin is a
// terminal (otherwise a warning, unless quiet, and no TTY).
func (o *options) setupSession(stdin, tty, quiet bool) sessionIO {
	s := sessionIO{out: o.Out, errOut: o.ErrOut}
	if !stdin {
		return s
	}
	s.in = o.In
	if !tty {
		return s
	}
	t := terminalOf(o.In, o.Out)
	if t == nil {
		if !quiet {
			fmt.Fprintln(o.ErrOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		}
		return s
	}
	s.tty, s.term, s.errOut = true, t, nil
	return s
}

// run runs fn's session; with a TTY the terminal is in raw mode (restored on return) and its
// size, and every change of it, goes to the container.
func (s sessionIO) run(ctx context.Context, fn func(context.Context, remotecommand.StreamOptions) error) error {
	// A nil reader or writer tells client-go not to open that stream.
	so := remotecommand.StreamOptions{Stdin: s.in, Stdout: s.out, Stderr: s.errOut, Tty: s.tty}
	// An interrupt (Ctrl-C without a TTY, SIGTERM) ends the session quietly, as the signal
	// ends kubectl: client-go would otherwise log the streams it loses.
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		klog.SetLogger(logr.Discard())
		cancel()
	})
	defer stop()
	if s.term != nil {
		restore, err := s.term.makeRaw()
		if err != nil {
			return err
		}
		defer restore()
		so.TerminalSizeQueue = s.term.monitorSize(streamCtx, s.nudge)
	}
	err := fn(streamCtx, so)
	if ctx.Err() != nil {
		return errReported
	}
	return err
}

// terminal is the user's terminal: stdin, and stdout when it is one too (its size is the
// one that matters for output).
type terminal struct {
	in, size int // file descriptors
}

// terminalOf returns the terminal behind in, or nil when in is not one.
func terminalOf(in io.Reader, out io.Writer) *terminal {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	t := &terminal{in: int(f.Fd()), size: int(f.Fd())}
	if of, ok := out.(*os.File); ok && term.IsTerminal(int(of.Fd())) {
		t.size = int(of.Fd())
	}
	return t
}

func (t *terminal) makeRaw() (func(), error) {
	state, err := term.MakeRaw(t.in)
	if err != nil {
		return nil, fmt.Errorf("set terminal to raw mode: %w", err)
	}
	return func() { _ = term.Restore(t.in, state) }, nil
}

func (t *terminal) currentSize() (remotecommand.TerminalSize, bool) {
	w, h, err := term.GetSize(t.size)
	if err != nil || w <= 0 || h <= 0 {
		return remotecommand.TerminalSize{}, false
	}
	return remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}, true
}

// monitorSize sends the terminal's size now and after every SIGWINCH until ctx ends.
// nudge first sends a size one larger, so a program that already drew (attach) redraws.
func (t *terminal) monitorSize(ctx context.Context, nudge bool) remotecommand.TerminalSizeQueue {
	q := &sizeQueue{done: ctx.Done(), sizes: make(chan remotecommand.TerminalSize, 1)}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		if size, ok := t.currentSize(); ok {
			if nudge {
				q.push(remotecommand.TerminalSize{Width: size.Width + 1, Height: size.Height + 1})
			}
			q.push(size)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				if size, ok := t.currentSize(); ok {
					q.push(size)
				}
			}
		}
	}()
	return q
}

// sizeQueue hands terminal sizes to client-go, which sends each on the resize channel.
type sizeQueue struct {
	done  <-chan struct{} // the session is over
	sizes chan remotecommand.TerminalSize
}

func (q *sizeQueue) push(s remotecommand.TerminalSize) {
	select {
	case q.sizes <- s:
	case <-q.done:
	}
}

// Next blocks until the next size, or returns nil when the session is over.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.sizes:
		return &s
	case <-q.done:
		return nil
	}
}
