package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	"k8s.io/client-go/tools/remotecommand"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/kubelet/internal/runtime/runtimetest"
	"minik8s.io/shared/workqueue/clock"
)

// fakeBackend runs pod default/web on the fake runtime, its containers running the contract
// suite's helper. restart creates new attach containers.
func fakeBackend(t *testing.T) (b *backend, restart func(t *testing.T)) {
	rt := fake.New(clock.Real{})
	rt.AddImage("pause")
	rt.AddImage("helper")
	rt.SetProgram("helper", runtimetest.Program)
	run := func(t *testing.T, cfg runtime.ContainerConfig) string {
		t.Helper()
		id, err := rt.Create(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sandbox := run(t, runtime.ContainerConfig{Name: "sandbox", Image: "pause", Hostname: "web", NetworkMode: "none"})
	helper := func(name string, args ...string) runtime.ContainerConfig {
		return runtime.ContainerConfig{Name: name, Image: "helper", Command: []string{runtimetest.HelperPath},
			Args: args, NetworkMode: "container:" + sandbox}
	}
	app := run(t, helper("app", "echo", "127.0.0.1:9000", "serve", "127.0.0.1:8080", "sleep", "forever"))
	stopped := run(t, helper("stopped", "exit", "0"))
	eventually(t, "the app to listen and the other container to exit", func() bool {
		c, _ := rt.Inspect(t.Context(), stopped)
		rc, err := rt.Logs(t.Context(), app, runtime.LogOptions{Tail: -1})
		if err != nil {
			return false
		}
		defer rc.Close()
		logs, _ := io.ReadAll(rc)
		return c.State == runtime.StateExited && strings.Contains(string(logs), "listening")
	})
	b = &backend{rt: rt, dial: rt.DialNetNS,
		pods: &podIndex{ids: map[string]string{"app": app, "stopped": stopped}, sandbox: sandbox},
		cmds: map[string]command{
			"streams": {[]string{runtimetest.HelperPath, "print", "out", "eprint", "err"}, "out\n"},
			"cat":     {[]string{runtimetest.HelperPath, "cat"}, ""},
			"exit3":   {[]string{runtimetest.HelperPath, "exit", "3"}, ""},
			"winsize": {[]string{runtimetest.HelperPath, "winsize", "100x30"}, "size 100x30\n"},
		},
		greet: func(c net.Conn) (string, error) {
			line, err := bufio.NewReader(c).ReadString('\n')
			return strings.TrimSuffix(line, "\n"), err
		},
		wantGreeting: "hello from web",
		attachTTY:    []string{"size 90x30\nhi\n"},
	}
	n := 0
	restart = func(t *testing.T) {
		n++
		plain := helper(fmt.Sprintf("attach-%d", n), "cat")
		plain.Stdin, plain.StdinOnce = true, true
		tty := helper(fmt.Sprintf("attach-tty-%d", n), "winsize", "90x30", "cat")
		tty.Stdin, tty.StdinOnce, tty.TTY = true, true, true
		b.pods.ids["attach"], b.pods.ids["attach-tty"] = run(t, plain), run(t, tty)
	}
	restart(t)
	return b, restart
}

func TestExecFake(t *testing.T) {
	b, _ := fakeBackend(t)
	testExec(t, b)
}

func TestAttachFake(t *testing.T) {
	b, restart := fakeBackend(t)
	testAttach(t, b, restart)
}

func TestPortForwardFake(t *testing.T) {
	b, _ := fakeBackend(t)
	testPortForward(t, b)
}

func TestDisconnectFake(t *testing.T) {
	b, _ := fakeBackend(t)
	testDisconnect(t, b)
}

// TestIdleTimeout leaves sessions without traffic past a short idle timeout (client-go pings
// every 5 s): the kubelet ends them, and the clients return.
func TestIdleTimeout(t *testing.T) {
	b, _ := fakeBackend(t)
	k := serve(t, b, func(c *Config) { c.StreamIdleTimeout = 500 * time.Millisecond })
	for _, ex := range executors[:2] {
		t.Run(ex.name, func(t *testing.T) {
			e, err := ex.make(k.cfg, k.execURL("app", b.cmds["cat"].argv, true, false))
			if err != nil {
				t.Fatal(err)
			}
			stdin, feed := io.Pipe()
			defer feed.Close()
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
			if ctx.Err() != nil {
				t.Fatalf("the idle session went on for %s", wait)
			}
			t.Logf("the client saw: %v", err)
			eventually(t, "the kubelet to end the session", func() bool { return k.sessions.Load() == 0 })
		})
	}
}

// TestStreamRequestErrors are refusals before any upgrade: the client sees their status and
// message.
func TestStreamRequestErrors(t *testing.T) {
	b, _ := fakeBackend(t)
	k := serve(t, b)
	spdyHeaders := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"},
		"X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	wsHeaders := func(protocol string) http.Header {
		return http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
			"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {protocol}}
	}
	type result struct {
		Code     int
		Contains bool
	}
	for _, tc := range []struct {
		name, method, path, token string
		header                    http.Header
		code                      int
		body                      string
	}{
		{"exec without a token", "POST", "/exec/default/web/app?command=true&output=1", "", spdyHeaders, 401, "Unauthorized"},
		{"attach without a token", "POST", "/attach/default/web/app?output=1", "", spdyHeaders, 401, "Unauthorized"},
		{"port-forward without a token", "POST", "/portForward/default/web", "", spdyHeaders, 401, "Unauthorized"},
		{"port-forward with a bad token", "GET", "/portForward/default/web?ports=9000", "bad", wsHeaders("v4.channel.k8s.io"), 401, "Unauthorized"},
		{"unknown container", "POST", "/exec/default/web/nope?command=true&output=1", "good", spdyHeaders, 404, `container "nope" not found`},
		{"container not running", "POST", "/exec/default/web/stopped?command=true&output=1", "good", spdyHeaders, 400, `container "stopped" in pod "web" is not running`},
		{"no command", "POST", "/exec/default/web/app?output=1", "good", spdyHeaders, 400, `"command" is required`},
		{"bad flag", "POST", "/exec/default/web/app?command=true&output=maybe", "good", spdyHeaders, 400, `"output" must be`},
		{"no stream", "POST", "/exec/default/web/app?command=true", "good", spdyHeaders, 400, "at least one of input, output and error"},
		{"attach stdin of a container without it", "POST", "/attach/default/web/app?input=1&output=1", "good", spdyHeaders, 400, "not created with stdin"},
		{"attach to an unknown container", "POST", "/attach/default/web/nope?output=1", "good", spdyHeaders, 404, `"nope"`},
		{"port-forward to an unknown pod", "POST", "/portForward/default/nope", "good", spdyHeaders, 404, `pod "nope"`},
		{"no upgrade", "POST", "/exec/default/web/app?command=true&output=1", "good", nil, 400, "upgrade to WebSocket or SPDY"},
		{"SPDY without a protocol version", "POST", "/exec/default/web/app?command=true&output=1", "good",
			http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}, 400, "X-Stream-Protocol-Version"},
		{"SPDY with unknown protocols", "POST", "/exec/default/web/app?command=true&output=1", "good",
			http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v9.channel.k8s.io"}}, 403, "unable to negotiate"},
		{"WebSocket port-forward without ports", "GET", "/portForward/default/web", "good", wsHeaders("v4.channel.k8s.io"), 400, `"ports" is required`},
		{"WebSocket port-forward to port 0", "GET", "/portForward/default/web?ports=0", "good", wsHeaders("v4.channel.k8s.io"), 400, "not a port number"},
		{"unknown WebSocket subprotocol", "GET", "/exec/default/web/app?command=true&output=1", "good", wsHeaders("v9.channel.k8s.io"), 400, `"v9.channel.k8s.io"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, k.url+tc.path, nil)
			for name, vs := range tc.header {
				req.Header[name] = vs
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			got := result{Code: resp.StatusCode, Contains: strings.Contains(string(body), tc.body)}
			if diff := cmp.Diff(result{Code: tc.code, Contains: true}, got); diff != "" {
				t.Errorf("%s %s: body %q, want it to contain %q (-want +got):\n%s", tc.method, tc.path, body, tc.body, diff)
			}
		})
	}
	// kubectl shows the kubelet's message.
	e, err := remotecommand.NewSPDYExecutor(k.cfg, "POST", k.execURL("nope", []string{"true"}, false, false))
	if err != nil {
		t.Fatal(err)
	}
	err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `container "nope" not found`) {
		t.Errorf("client-go's error for an unknown container = %v, want it to name the container", err)
	}
}

// wsClient speaks a channel protocol as the official Python client and older clients do.
type wsClient struct {
	ws     *websocket.Conn
	base64 bool
}

func dialWebSocket(t *testing.T, k kubelet, path, protocol string) wsClient {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{protocol},
		HandshakeTimeout: wait}
	ws, resp, err := d.DialContext(t.Context(), "wss"+strings.TrimPrefix(k.url, "https")+path,
		http.Header{"Authorization": {"Bearer good"}})
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		}
		t.Fatalf("dial %s with %s: %v %s", path, protocol, err, body)
	}
	t.Cleanup(func() { ws.Close() })
	if ws.Subprotocol() != protocol {
		t.Fatalf("negotiated %q, want %q", ws.Subprotocol(), protocol)
	}
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	return wsClient{ws: ws, base64: strings.Contains(protocol, "base64")}
}

func (c wsClient) send(t *testing.T, ch byte, p []byte) {
	t.Helper()
	kind, msg := websocket.BinaryMessage, append([]byte{ch}, p...)
	if c.base64 {
		kind, msg = websocket.TextMessage, []byte(string('0'+ch)+base64.StdEncoding.EncodeToString(p))
	}
	if err := c.ws.WriteMessage(kind, msg); err != nil {
		t.Fatal(err)
	}
}

// next returns the next message's channel and data; ok is false once the server has closed.
func (c wsClient) next(t *testing.T) (ch byte, data []byte, ok bool) {
	t.Helper()
	_, msg, err := c.ws.ReadMessage()
	if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		return 0, nil, false
	}
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(msg) == 0 {
		t.Fatal("an empty message, without a channel")
	}
	if !c.base64 {
		return msg[0], msg[1:], true
	}
	data, err = base64.StdEncoding.DecodeString(string(msg[1:]))
	if err != nil {
		t.Fatalf("message %q: %v", msg, err)
	}
	return msg[0] - '0', data, true
}

// TestExecWebSocketProtocols runs a failing command over the channel protocols client-go no
// longer speaks: v4 reports a Status, the older ones the failure's message.
func TestExecWebSocketProtocols(t *testing.T) {
	b, _ := fakeBackend(t)
	k := serve(t, b)
	u := k.execURL("app", []string{runtimetest.HelperPath, "print", "out", "eprint", "err", "exit", "3"}, false, false)
	for _, tc := range []struct {
		protocol  string
		wantError string
	}{
		{"v4.base64.channel.k8s.io", `"reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}`},
		{"channel.k8s.io", "command terminated with non-zero exit code: command terminated with exit code 3"},
		{"base64.channel.k8s.io", "command terminated with non-zero exit code: command terminated with exit code 3"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			c := dialWebSocket(t, k, u.RequestURI(), tc.protocol)
			got := map[byte]string{}
			for {
				ch, data, ok := c.next(t)
				if !ok {
					break
				}
				got[ch] += string(data)
			}
			if !strings.Contains(got[3], tc.wantError) {
				t.Errorf("error channel %q, want it to contain %q", got[3], tc.wantError)
			}
			delete(got, 3)
			if diff := cmp.Diff(map[byte]string{1: "out\n", 2: "err\n"}, got); diff != "" {
				t.Errorf("channels (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPortForwardWebSocketChannels forwards two ports over v4 channels, as the Python client
// does: each channel opens with its port, data echoes on the first port's data channel, and
// the second port, where nothing listens, reports on its error channel.
func TestPortForwardWebSocketChannels(t *testing.T) {
	b, _ := fakeBackend(t)
	k := serve(t, b)
	for _, protocol := range []string{"v4.channel.k8s.io", "v4.base64.channel.k8s.io"} {
		t.Run(protocol, func(t *testing.T) {
			c := dialWebSocket(t, k, "/portForward/default/web?ports=9000,9", protocol)
			want := map[byte]string{0: "\x28\x23", 1: "\x28\x23", 2: "\x09\x00", 3: "\x09\x00"}
			got := map[byte]string{}
			for range 4 {
				ch, data, ok := c.next(t)
				if !ok {
					t.Fatal("closed before every channel announced its port")
				}
				got[ch] = string(data)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("first messages (-want +got):\n%s", diff)
			}
			c.send(t, 0, []byte("ping over a channel"))
			got = map[byte]string{}
			for got[0] != "ping over a channel" || !strings.Contains(got[3], "port 9") {
				ch, data, ok := c.next(t)
				if !ok {
					t.Fatalf("closed early; got %q", got)
				}
				got[ch] += string(data)
			}
		})
	}
}

// TestDialNetNSFake is the fake's namespace dial the other tests rely on.
func TestDialNetNSFake(t *testing.T) {
	b, _ := fakeBackend(t)
	path, err := b.rt.NetNS(t.Context(), b.pods.sandbox)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := b.dial(ctx, path, 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := b.greet(c); got != b.wantGreeting {
		t.Errorf("greeting %q, %v; want %q", got, err, b.wantGreeting)
	}
	if _, err := b.dial(ctx, path, 8081); err == nil {
		t.Error("dial of a port nothing listens on succeeded")
	}
}
