package server

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/registry"
)

// fakeKubelet upgrades /exec and /portForward requests and echoes what the client sends
// after the upgrade; other requests get the kubelet's plain-text refusal.
type fakeKubelet struct {
	srv               *httptest.Server
	gotPath, gotQuery string
	gotAuth, gotProto string
}

func newFakeKubelet(t *testing.T) *fakeKubelet {
	k := &fakeKubelet{}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.gotPath, k.gotQuery, k.gotAuth = r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")
		k.gotProto = r.Header.Get("X-Stream-Protocol-Version")
		if strings.Contains(r.URL.Path, "/refuse") {
			http.Error(w, `container "refuse" was not created with stdin: true`, http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: " + k.gotProto + "\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	}))
	t.Cleanup(k.srv.Close)
	return k
}

// registerNode makes a Node whose kubelet is at addr.
func (h *harness) registerNode(name, addr string) {
	h.t.Helper()
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	h.mustDo(http.StatusCreated, "POST", "/api/v1/nodes", "", map[string]any{
		"metadata": map[string]any{"name": name},
		"status": map[string]any{
			"addresses":       []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}},
			"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": port}},
		},
	}, nil)
	h.t.Cleanup(func() { h.do("DELETE", "/api/v1/nodes/"+name, "", nil, nil) })
}

// upgrade sends an upgrade request by hand and returns the answer's status line and headers,
// and the connection for what follows.
func (h *harness) upgrade(path string) (*http.Response, net.Conn, *bufio.Reader) {
	h.t.Helper()
	u, _ := url.Parse(h.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	req := "POST " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + testToken +
		"\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		h.t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, conn, br
}

// exec, attach and port-forward are checked, then proxied to the kubelet with the upgrade
// passed through and the apiserver's own credentials; refusals come back as Status.
func TestPodStreamProxy(t *testing.T) {
	kubelet := newFakeKubelet(t)
	h := newHarnessWith(t, func(c *Config) {
		c.Kubelet = &KubeletClient{HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, Token: "kubelet-token"}
	})
	ns := h.namespace()
	node := "streams-" + registry.RandomSuffix()
	h.registerNode(node, strings.TrimPrefix(kubelet.srv.URL, "https://"))
	pods := "/api/v1/namespaces/" + ns + "/pods"
	pod := podManifest("p", nil)
	pod["spec"].(map[string]any)["containers"] = []any{
		map[string]any{"name": "app", "image": "echo:latest"}, map[string]any{"name": "refuse", "image": "echo:latest"}}
	h.mustDo(http.StatusCreated, "POST", pods, "", pod, nil)

	var st metav1.Status
	if code, _ := h.do("POST", pods+"/p/exec?container=app&command=sh&stdout=true", "", nil, &st); code != 400 || !strings.Contains(st.Message, "not running") || !strings.Contains(st.Message, "Pending") {
		t.Fatalf("exec into a pending pod: %d %+v", code, st)
	}
	h.mustDo(http.StatusCreated, "POST", pods+"/p/binding", "", map[string]any{"target": map[string]any{"name": node}}, nil)
	running := map[string]any{"running": map[string]any{}}
	h.mustDo(http.StatusOK, "PATCH", pods+"/p/status", "application/merge-patch+json", map[string]any{"status": map[string]any{
		"phase": "Running", "containerStatuses": []any{
			map[string]any{"name": "app", "ready": true, "restartCount": 0, "image": "echo", "imageID": "", "state": running},
			map[string]any{"name": "refuse", "ready": true, "restartCount": 0, "image": "echo", "imageID": "", "state": running}},
	}}, nil)

	cases := []struct {
		name, query string
		code        int
		msg         string
	}{
		{"no container named", "exec?command=sh&stdout=true", 400, "a container name must be specified"},
		{"unknown container", "exec?container=nope&command=sh&stdout=true", 400, "container nope is not valid"},
		{"no command", "exec?container=app&stdout=true", 400, "at least 1 command"},
		{"no stream", "exec?container=app&command=sh", 400, "at least 1 of stdin, stdout, stderr"},
		{"kubelet refusal", "attach?container=refuse&stdin=true", 400, "was not created with stdin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st metav1.Status
			if code, hdr := h.do("POST", pods+"/p/"+tc.query, "", nil, &st); code != tc.code || st.Kind != "Status" || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("%d %s %+v, want %d %q", code, hdr.Get("Content-Type"), st, tc.code, tc.msg)
			}
		})
	}

	for _, tc := range []struct{ query, path, kubeletQuery string }{
		{"exec?container=app&command=sh&command=-c&command=true&stdin=True&stdout=1&tty=true", "/exec/" + ns + "/p/app", "command=sh&command=-c&command=true&input=1&output=1&tty=1"},
		{"portforward?ports=8080", "/portForward/" + ns + "/p", "ports=8080"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, conn, br := h.upgrade(pods + "/p/" + tc.query)
			if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "SPDY/3.1" {
				t.Fatalf("upgrade answered %s %v", resp.Status, resp.Header)
			}
			if _, err := io.WriteString(conn, "hello\n"); err != nil {
				t.Fatal(err)
			}
			if line, err := br.ReadString('\n'); err != nil || line != "echo hello\n" {
				t.Fatalf("after the upgrade read %q, %v", line, err)
			}
			if kubelet.gotPath != tc.path || kubelet.gotQuery != tc.kubeletQuery {
				t.Fatalf("kubelet got %s?%s, want %s?%s", kubelet.gotPath, kubelet.gotQuery, tc.path, tc.kubeletQuery)
			}
			if kubelet.gotAuth != "Bearer kubelet-token" || kubelet.gotProto != "v4.channel.k8s.io" {
				t.Fatalf("kubelet got credentials %q, protocol %q", kubelet.gotAuth, kubelet.gotProto)
			}
		})
	}

	kubelet.srv.Close()
	if code, _ := h.do("POST", pods+"/p/exec?container=app&command=sh&stdout=true", "", nil, &st); code != 503 || !strings.Contains(st.Message, node) {
		t.Fatalf("unreachable kubelet: %d %+v", code, st)
	}
}
