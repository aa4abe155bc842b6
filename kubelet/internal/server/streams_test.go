package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"minik8s.io/kubelet/internal/runtime"
)

// wait bounds every wait of these tests; generous, since Docker on a busy machine is slow,
// and never part of an assertion.
const wait = 90 * time.Second

// backend is a runtime running pod default/web, with what the scenarios run in it. The pod's
// sandbox holds the network namespace; its containers:
//
//	app         runs an echo server on port 9000 and a greeting on 127.0.0.1:8080
//	attach      created with stdin and stdinOnce, copies its stdin to stdout
//	attach-tty  created with stdin, stdinOnce and a TTY, waits for a 90x30 terminal
//	stopped     has exited
type backend struct {
	rt   runtime.Runtime
	dial func(ctx context.Context, path string, port uint16) (net.Conn, error)
	pods *podIndex
	// cmds are the commands of the exec scenarios by name: streams (out on stdout, err on
	// stderr), cat, exit3, winsize (waits for a 100x30 terminal), with their stdout.
	cmds map[string]command
	// greet reads the greeting of port 8080 from a connection to it.
	greet        func(c net.Conn) (string, error)
	wantGreeting string
	// attachTTY is what the attach-tty container prints once its terminal is 90x30 and
	// its stdin says "hi".
	attachTTY []string
}

type command struct {
	argv   []string
	stdout string
}

// podIndex is the Containers of a backend: pod default/web only.
type podIndex struct {
	ids     map[string]string // container name -> id
	sandbox string
}

func (p *podIndex) ContainerID(_ context.Context, ns, pod, ctr string, previous bool) (string, error) {
	if id, ok := p.ids[ctr]; ok && ns == "default" && pod == "web" && !previous {
		return id, nil
	}
	return "", fmt.Errorf("container %s of %s/%s: %w", ctr, ns, pod, runtime.ErrNotFound)
}

func (p *podIndex) SandboxID(_ context.Context, ns, pod string) (string, error) {
	if ns == "default" && pod == "web" {
		return p.sandbox, nil
	}
	return "", fmt.Errorf("sandbox of %s/%s: %w", ns, pod, runtime.ErrNotFound)
}

func (p *podIndex) PodContainers(context.Context) ([]PodRef, error) { return nil, nil }

// kubelet serves b over TLS, as the kubelet does, accepting the token "good". sessions counts
// the exec, attach and port-forward requests being served.
type kubelet struct {
	srv      *Server
	url      string
	cfg      *rest.Config
	sessions *atomic.Int32
}

func serve(t *testing.T, b *backend, options ...func(*Config)) kubelet {
	t.Helper()
	cfg := Config{Node: "n1", Runtime: b.rt, Containers: b.pods, DialNetNS: b.dial,
		Review: func(_ context.Context, token string) (Identity, bool, error) {
			return Identity{User: "u"}, token == "good", nil
		}}
	for _, o := range options {
		o(&cfg)
	}
	s := New(cfg)
	sessions := &atomic.Int32{}
	h := s.Handler()
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/healthz") {
			sessions.Add(1)
			defer sessions.Add(-1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return kubelet{srv: s, url: hs.URL, sessions: sessions,
		cfg: &rest.Config{Host: hs.URL, BearerToken: "good", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}}
}

// execURL is the kubelet's exec URL for argv in container, with the query the apiserver sends.
func (k kubelet) execURL(container string, argv []string, stdin, tty bool) *url.URL {
	q := url.Values{"command": argv, "output": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	u, _ := url.Parse(k.url + "/exec/default/web/" + container + "?" + q.Encode())
	return u
}

func (k kubelet) attachURL(container string, stdin, tty bool) *url.URL {
	u := k.execURL(container, nil, stdin, tty)
	u.Path = "/attach/default/web/" + container
	q := u.Query()
	q.Del("command")
	u.RawQuery = q.Encode()
	return u
}

// executor is a client-go executor as kubectl builds them.
type executor struct {
	name string
	make func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error)
	// closesStdin says the protocol can tell the end of stdin (v4 WebSockets cannot).
	closesStdin bool
	// exitCodes says a non-zero exit comes back as an exec.ExitError; older protocols
	// carry only the message.
	exitCodes bool
	// resizes says the protocol carries terminal sizes (v3 and later).
	resizes bool
}

func shouldFallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

var executors = []executor{
	{name: "spdy", closesStdin: true, exitCodes: true, resizes: true, make: func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(cfg, "POST", u)
	}},
	{name: "websocket v5", closesStdin: true, exitCodes: true, resizes: true, make: func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	}},
	{name: "fallback", closesStdin: true, exitCodes: true, resizes: true, make: func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		if err != nil {
			return nil, err
		}
		sp, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
		if err != nil {
			return nil, err
		}
		return remotecommand.NewFallbackExecutor(ws, sp, shouldFallback)
	}},
	{name: "websocket v4", exitCodes: true, resizes: true, make: func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", u.String(), "v4.channel.k8s.io")
	}},
	{name: "spdy v2", closesStdin: true, make: func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		tr, up, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, err
		}
		return remotecommand.NewSPDYExecutorForProtocols(tr, up, "POST", u, "v2.channel.k8s.io")
	}},
}

// syncBuffer is an output client-go may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written, with a terminal's carriage returns taken out.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ReplaceAll(b.b.String(), "\r", "")
}

// sizeQueue hands client-go one terminal size, then ends.
type sizeQueue struct {
	sizes chan remotecommand.TerminalSize
}

func newSizeQueue(w, h uint16) *sizeQueue {
	q := &sizeQueue{sizes: make(chan remotecommand.TerminalSize, 1)}
	q.sizes <- remotecommand.TerminalSize{Width: w, Height: h}
	close(q.sizes)
	return q
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := <-q.sizes
	if !ok {
		return nil
	}
	return &sz
}

type outcome struct {
	Stdout, Stderr string
	Err            string
}

// testExec runs every exec scenario through every executor.
func testExec(t *testing.T, b *backend) {
	k := serve(t, b)
	for _, ex := range executors {
		t.Run(ex.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				cmd   string
				stdin string
				tty   bool
				want  outcome
			}{
				{name: "stdout and stderr apart", cmd: "streams", want: outcome{Stdout: b.cmds["streams"].stdout, Stderr: "err\n"}},
				{name: "stdin to its end", cmd: "cat", stdin: "hello\nworld\n", want: outcome{Stdout: "hello\nworld\n"}},
				{name: "exit code", cmd: "exit3", want: outcome{Err: "exit code 3"}},
				{name: "terminal resized", cmd: "winsize", tty: true, want: outcome{Stdout: b.cmds["winsize"].stdout}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if tc.stdin != "" && !ex.closesStdin {
						t.Skip("the protocol cannot tell the command its stdin has ended")
					}
					if tc.tty && !ex.resizes {
						t.Skip("the protocol has no terminal sizes")
					}
					cmd := b.cmds[tc.cmd]
					e, err := ex.make(k.cfg, k.execURL("app", cmd.argv, tc.stdin != "", tc.tty))
					if err != nil {
						t.Fatal(err)
					}
					var stdout, stderr syncBuffer
					opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr, Tty: tc.tty}
					if tc.stdin != "" {
						opts.Stdin = strings.NewReader(tc.stdin)
					}
					if tc.tty {
						opts.Stderr = nil
						opts.TerminalSizeQueue = newSizeQueue(100, 30)
					}
					ctx, cancel := context.WithTimeout(t.Context(), wait)
					defer cancel()
					err = e.StreamWithContext(ctx, opts)
					got := outcome{Stdout: stdout.String(), Stderr: stderr.String()}
					if err != nil {
						got.Err = err.Error()
						if strings.Contains(got.Err, tc.want.Err) && tc.want.Err != "" {
							got.Err = tc.want.Err
						}
					}
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("exec %q (-want +got):\n%s", cmd.argv, diff)
					}
					var exitErr exec.ExitError
					if tc.cmd == "exit3" && ex.exitCodes && (!errors.As(err, &exitErr) || exitErr.ExitStatus() != 3) {
						t.Errorf("exec %q returned %#v, want an exec.ExitError with status 3", cmd.argv, err)
					}
				})
			}
		})
	}
}

// testAttach attaches to the two containers created with stdin, through every executor
// that can end stdin; each attach ends the container, so each gets new ones.
func testAttach(t *testing.T, b *backend, restart func(t *testing.T)) {
	k := serve(t, b)
	for _, ex := range executors {
		if !ex.closesStdin {
			continue
		}
		t.Run(ex.name, func(t *testing.T) {
			restart(t)
			for _, tc := range []struct {
				container string
				tty       bool
				input     string
				want      []string
			}{
				{"attach", false, "ping\n", []string{"ping\n"}},
				{"attach-tty", true, "hi\n", b.attachTTY},
			} {
				t.Run(tc.container, func(t *testing.T) {
					if tc.tty && !ex.resizes {
						t.Skip("the protocol has no terminal sizes")
					}
					e, err := ex.make(k.cfg, k.attachURL(tc.container, true, tc.tty))
					if err != nil {
						t.Fatal(err)
					}
					var stdout, stderr syncBuffer
					// Stdin ends once the container has answered, as a user would end it: with
					// StdinOnce its end ends the container's stdin, and a terminal's hangs up.
					stdin, feed := io.Pipe()
					defer feed.Close()
					ctx, cancel := context.WithTimeout(t.Context(), wait)
					defer cancel()
					go func() {
						if _, err := io.WriteString(feed, tc.input); err != nil {
							return
						}
						for !containsAll(stdout.String(), tc.want) && ctx.Err() == nil {
							time.Sleep(20 * time.Millisecond)
						}
						feed.Close()
					}()
					opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr, Tty: tc.tty}
					if tc.tty {
						opts.Stderr = nil
						opts.TerminalSizeQueue = newSizeQueue(90, 30)
					}
					if err := e.StreamWithContext(ctx, opts); err != nil {
						t.Fatalf("attach to %s: %v (stdout %q)", tc.container, err, stdout.String())
					}
					for _, want := range tc.want {
						if !strings.Contains(stdout.String(), want) {
							t.Errorf("attached stdout = %q, want it to contain %q", stdout.String(), want)
						}
					}
					if stderr.String() != "" {
						t.Errorf("attached stderr = %q, want none", stderr.String())
					}
				})
			}
		})
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// dialer is a client-go port-forward dialer as kubectl builds them.
type dialer struct {
	name string
	make func(cfg *rest.Config, u *url.URL) (httpstream.Dialer, error)
}

var dialers = []dialer{
	{"spdy", func(cfg *rest.Config, u *url.URL) (httpstream.Dialer, error) {
		tr, up, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, err
		}
		return spdy.NewDialer(up, &http.Client{Transport: tr}, "POST", u), nil
	}},
	{"spdy over websocket", func(cfg *rest.Config, u *url.URL) (httpstream.Dialer, error) {
		return portforward.NewSPDYOverWebsocketDialer(u, cfg)
	}},
	{"fallback", func(cfg *rest.Config, u *url.URL) (httpstream.Dialer, error) {
		tunnel, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
		if err != nil {
			return nil, err
		}
		tr, up, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, err
		}
		return portforward.NewFallbackDialer(tunnel, spdy.NewDialer(up, &http.Client{Transport: tr}, "POST", u), shouldFallback), nil
	}},
}

// forwardPorts forwards local ports to the pod's, as `kubectl port-forward` does, until the
// test ends; it returns the local addresses in the order of ports.
func forwardPorts(t *testing.T, d httpstream.Dialer, ports ...uint16) []string {
	t.Helper()
	specs := make([]string, len(ports))
	for i, p := range ports {
		specs[i] = fmt.Sprintf("0:%d", p)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, specs, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	t.Cleanup(func() {
		close(stop)
		select {
		case <-done:
		case <-time.After(wait):
			t.Error("port-forward did not stop")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(wait):
		t.Fatal("port-forward never got ready")
	}
	fwd, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(fwd))
	for i, f := range fwd {
		out[i] = fmt.Sprintf("127.0.0.1:%d", f.Local)
	}
	return out
}

func dialLocal(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(wait))
	return c
}

// testPortForward forwards to the pod's greeting on 127.0.0.1:8080, echoes 10 MB through
// its port 9000, and finds nothing on port 9 through every dialer.
func testPortForward(t *testing.T, b *backend) {
	k := serve(t, b)
	u, _ := url.Parse(k.url + "/portForward/default/web")
	for _, d := range dialers {
		t.Run(d.name, func(t *testing.T) {
			dl, err := d.make(k.cfg, u)
			if err != nil {
				t.Fatal(err)
			}
			local := forwardPorts(t, dl, 8080, 9000, 9)
			t.Run("greeting on the pod's loopback", func(t *testing.T) {
				got, err := b.greet(dialLocal(t, local[0]))
				if err != nil || got != b.wantGreeting {
					t.Errorf("greeting = %q, %v; want %q", got, err, b.wantGreeting)
				}
			})
			t.Run("10 MB echoed", func(t *testing.T) {
				data := make([]byte, 10<<20)
				rand.Read(data)
				c := dialLocal(t, local[1])
				sent := make(chan error, 1)
				go func() {
					_, err := c.Write(data)
					sent <- err
				}()
				got := make([]byte, len(data))
				n, err := io.ReadFull(c, got)
				if err != nil {
					t.Fatalf("read back %d of %d bytes: %v", n, len(data), err)
				}
				if err := <-sent; err != nil {
					t.Fatalf("send: %v", err)
				}
				if !bytes.Equal(got, data) {
					i := 0
					for i < len(data) && got[i] == data[i] {
						i++
					}
					t.Errorf("echoed bytes differ from those sent, first at offset %d", i)
				}
			})
			t.Run("a pod closing while the client sends stalls nothing", func(t *testing.T) {
				c := dialLocal(t, local[0])
				// The pod answers and closes; what the client goes on sending must not hold up
				// the session's other connections.
				go func() { _, _ = c.Write(append([]byte("GET / HTTP/1.0\r\n\r\n"), make([]byte, 4<<20)...)) }()
				_, _ = io.ReadAll(c)
				for i := range 6 {
					e := dialLocal(t, local[1])
					msg := fmt.Sprintf("ping %d\n", i)
					if _, err := io.WriteString(e, msg); err != nil {
						t.Fatal(err)
					}
					got := make([]byte, len(msg))
					if _, err := io.ReadFull(e, got); err != nil || string(got) != msg {
						t.Fatalf("connection %d after the closed one echoed %q, %v; want %q", i, got, err, msg)
					}
					e.Close()
				}
			})
			t.Run("nothing listening", func(t *testing.T) {
				got, err := io.ReadAll(dialLocal(t, local[2]))
				if len(got) != 0 || (err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err)) {
					t.Errorf("a port nothing listens on gave %q, %v; want the connection closed without data", got, err)
				}
			})
		})
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// testDisconnect ends clients in the middle of a cat that would run forever, and waits for
// the kubelet to end their sessions; then the kubelet's shutdown ends them.
func testDisconnect(t *testing.T, b *backend) {
	k := serve(t, b)
	for _, ex := range executors[:2] {
		t.Run(ex.name, func(t *testing.T) {
			if n := k.sessions.Load(); n != 0 {
				t.Fatalf("%d sessions before the test", n)
			}
			e, err := ex.make(k.cfg, k.execURL("app", b.cmds["cat"].argv, true, false))
			if err != nil {
				t.Fatal(err)
			}
			stdin, feed := io.Pipe()
			defer feed.Close()
			var stdout syncBuffer
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: io.Discard})
			}()
			// The echo proves the session is up before the client goes.
			if _, err := io.WriteString(feed, "up\n"); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the echo of the first line", func() bool { return stdout.String() == "up\n" })
			cancel()
			<-done
			eventually(t, "the kubelet to end the session", func() bool { return k.sessions.Load() == 0 })
		})
	}
	t.Run("kubelet shutdown", func(t *testing.T) {
		done := make(chan error, len(executors[:2]))
		for _, ex := range executors[:2] {
			e, err := ex.make(k.cfg, k.execURL("app", b.cmds["cat"].argv, true, false))
			if err != nil {
				t.Fatal(err)
			}
			stdin, feed := io.Pipe()
			defer feed.Close()
			go func() {
				done <- e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
			}()
		}
		eventually(t, "both sessions to start", func() bool { return k.sessions.Load() == 2 })
		k.srv.CloseStreams()
		for range executors[:2] {
			select {
			case <-done:
			case <-time.After(wait):
				t.Fatal("a client still streams after the kubelet closed its sessions")
			}
		}
		eventually(t, "the kubelet to end the sessions", func() bool { return k.sessions.Load() == 0 })
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
