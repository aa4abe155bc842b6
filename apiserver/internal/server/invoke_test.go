package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// gatewayCall is what the fake gateway received.
type gatewayCall struct {
	path, contentType, body string
}

// fakeGateway answers POST /function/<ns>/<name> and /workflow/<ns>/<name> as the serverless
// gateway does: the handler's JSON with the pod that served it, or an error.
type fakeGateway struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []gatewayCall
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.calls = append(g.calls, gatewayCall{path: r.URL.Path, contentType: r.Header.Get("Content-Type"), body: string(body)})
		g.mu.Unlock()
		if r.Method != http.MethodPost {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(serverlessv1.HeaderServedBy, "pod-1")
		switch {
		case strings.HasSuffix(r.URL.Path, "/busy"):
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"100 calls wait for busy, the most it queues"}`)
		case strings.HasSuffix(r.URL.Path, "/boom"):
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, `{"error":"ZeroDivisionError: division by zero","traceback":"line 3"}`)
		default:
			_, _ = io.WriteString(w, `{"echo":`+string(body)+`}`)
		}
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGateway) client(t *testing.T) *GatewayClient {
	u, err := url.Parse(g.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &GatewayClient{URL: u, HTTP: g.srv.Client()}
}

func (g *fakeGateway) received() []gatewayCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gatewayCall(nil), g.calls...)
}

func functionManifest(name string) map[string]any {
	return map[string]any{
		"apiVersion": "serverless.minik8s.io/v1", "kind": "Function",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"handler": "main.handle", "source": map[string]any{
			"main.py": "def handle(event):\n    return event\n"}},
	}
}

func workflowManifest(name string) map[string]any {
	return map[string]any{
		"apiVersion": "serverless.minik8s.io/v1", "kind": "Workflow",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"startAt": "done", "states": map[string]any{
			"done": map[string]any{"type": "Succeed"}}},
	}
}

// invoke of a function or workflow is proxied to the gateway once the object exists; the
// gateway's code, body, Content-Type and X-Served-By come back as they are.
func TestInvokeProxy(t *testing.T) {
	gw := newFakeGateway(t)
	h := newHarnessWith(t, func(c *Config) { c.Gateway = gw.client(t) })
	ns := h.namespace()
	fns := "/apis/serverless.minik8s.io/v1/namespaces/" + ns + "/functions"
	wfs := "/apis/serverless.minik8s.io/v1/namespaces/" + ns + "/workflows"
	h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("add"), nil)
	h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("boom"), nil)
	h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("busy"), nil)
	h.mustDo(http.StatusCreated, "POST", wfs, "", workflowManifest("flow"), nil)

	cases := []struct {
		name, path, body string
		code             int
		want             string // the answer's body; for a refusal, its Status's message
		reason           metav1.StatusReason
		gatewayPath      string // empty: the gateway is not called
	}{
		{name: "function", path: fns + "/add/invoke", body: `{"a":1,"b":2}`, code: 200,
			want: `{"echo":{"a":1,"b":2}}`, gatewayPath: "/function/" + ns + "/add"},
		{name: "workflow", path: wfs + "/flow/invoke", body: `{"n":3}`, code: 200,
			want: `{"echo":{"n":3}}`, gatewayPath: "/workflow/" + ns + "/flow"},
		{name: "handler error becomes a Status", path: fns + "/boom/invoke", body: `{}`, code: 502,
			want: "function " + ns + "/boom: ZeroDivisionError: division by zero\nline 3", gatewayPath: "/function/" + ns + "/boom"},
		{name: "saturated", path: fns + "/busy/invoke", body: `{}`, code: 429, reason: metav1.StatusReasonTooManyRequests,
			want: "function " + ns + "/busy: 100 calls wait for busy, the most it queues", gatewayPath: "/function/" + ns + "/busy"},
		{name: "empty body is the gateway's to judge", path: fns + "/add/invoke", body: ``, code: 200,
			want: `{"echo":}`, gatewayPath: "/function/" + ns + "/add"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(gw.received())
			resp, body := h.send("POST", tc.path, []byte(tc.body), "Content-Type", "application/json")
			if tc.code >= 400 {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != tc.code || st.Kind != "Status" ||
					int(st.Code) != tc.code || st.Message != tc.want || st.Reason != tc.reason {
					t.Fatalf("got %d %s, want a Status %d %q reason %q", resp.StatusCode, body, tc.code, tc.want, tc.reason)
				}
			} else if resp.StatusCode != tc.code || string(body) != tc.want {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, body, tc.code, tc.want)
			}
			if ct, by := resp.Header.Get("Content-Type"), resp.Header.Get(serverlessv1.HeaderServedBy); ct != "application/json" || by != "pod-1" {
				t.Errorf("headers: Content-Type %q, X-Served-By %q", ct, by)
			}
			if ra := resp.Header.Get("Retry-After"); (tc.code == 429) != (ra == "1") {
				t.Errorf("Retry-After %q", ra)
			}
			calls := gw.received()
			if len(calls) != before+1 {
				t.Fatalf("gateway calls %d, want %d", len(calls), before+1)
			}
			got := calls[len(calls)-1]
			if got.path != tc.gatewayPath || got.body != tc.body || got.contentType != "application/json" {
				t.Errorf("gateway got %+v, want path %s body %q", got, tc.gatewayPath, tc.body)
			}
		})
	}

	refused := []struct {
		name, method, path, body, msg string
		code                          int
		reason                        metav1.StatusReason
	}{
		{name: "unknown function", method: "POST", path: fns + "/missing/invoke", body: `{}`, code: 404, reason: metav1.StatusReasonNotFound, msg: `"missing" not found`},
		{name: "unknown workflow", method: "POST", path: wfs + "/missing/invoke", body: `{}`, code: 404, reason: metav1.StatusReasonNotFound, msg: `"missing" not found`},
		{name: "GET", method: "GET", path: fns + "/add/invoke", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "not served for pods", method: "POST", path: "/api/v1/namespaces/" + ns + "/pods/p/invoke", body: `{}`, code: 404, reason: metav1.StatusReasonNotFound},
		{name: "too large", method: "POST", path: fns + "/add/invoke", body: strings.Repeat(" ", MaxBodyBytes+10), code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := len(gw.received())
			var st metav1.Status
			code, _ := h.do(tc.method, tc.path, "application/json", tc.body, &st)
			if code != tc.code || st.Reason != tc.reason || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("got %d %q %q, want %d %q with %q", code, st.Reason, st.Message, tc.code, tc.reason, tc.msg)
			}
			if n := len(gw.received()); n != before {
				t.Errorf("the gateway was called")
			}
		})
	}
}

// Without a gateway, or with one that does not answer, invoke is a 503 saying why; an unknown
// object is still a 404.
func TestInvokeUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	ln.Close()
	for _, tc := range []struct {
		name string
		gw   *GatewayClient
		msg  string
	}{
		{name: "not configured", msg: "the serverless gateway is not configured on this apiserver (--serverless-gateway-url)"},
		{name: "unreachable", gw: &GatewayClient{URL: closed, HTTP: &http.Client{}}, msg: "cannot reach the serverless gateway at " + closed.String() + ": dial tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, func(c *Config) { c.Gateway = tc.gw })
			ns := h.namespace()
			fns := "/apis/serverless.minik8s.io/v1/namespaces/" + ns + "/functions"
			h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("add"), nil)
			var st metav1.Status
			if code, _ := h.do("POST", fns+"/add/invoke", "application/json", `{}`, &st); code != 503 || st.Reason != metav1.StatusReasonServiceUnavailable || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("got %d %q %q, want 503 with %q", code, st.Reason, st.Message, tc.msg)
			}
			if code, _ := h.do("POST", fns+"/other/invoke", "application/json", `{}`, &st); code != 404 {
				t.Fatalf("unknown function: got %d %q", code, st.Message)
			}
		})
	}
}

// Discovery lists the invoke subresources, so kubectl create --raw and clients find them.
func TestInvokeDiscovery(t *testing.T) {
	h := newHarness(t)
	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/apis/serverless.minik8s.io/v1", "", nil, &list)
	found := map[string]metav1.Verbs{}
	for _, r := range list.APIResources {
		found[r.Name] = r.Verbs
	}
	for _, name := range []string{"functions/invoke", "workflows/invoke"} {
		if v, ok := found[name]; !ok || len(v) != 1 || v[0] != "create" {
			t.Errorf("%s: verbs %v (listed %v), want [create]", name, v, ok)
		}
	}
}

// The real kubectl calls invoke with create --raw, printing the answer, and words a refusal as
// it words any error of the API.
func TestInvokeRealKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real kubectl")
	}
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not on PATH: %v", err)
	}
	gw := newFakeGateway(t)
	h := newHarnessWith(t, func(c *Config) { c.Gateway = gw.client(t) })
	ns := h.namespace()
	fns := "/apis/serverless.minik8s.io/v1/namespaces/" + ns + "/functions"
	h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("add"), nil)
	h.mustDo(http.StatusCreated, "POST", fns, "", functionManifest("boom"), nil)
	// kubectl sends its token over TLS only.
	tls := httptest.NewTLSServer(h.srv.Handler())
	t.Cleanup(tls.Close)
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(`{"a":1,"b":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), path, append([]string{"--server", tls.URL, "--insecure-skip-tls-verify", "--token", testToken,
			"--cache-dir", filepath.Join(dir, "cache")}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := kubectl("create", "--raw", fns+"/add/invoke", "-f", body)
	if err != nil || strings.TrimSpace(out) != `{"echo":{"a":1,"b":2}}` {
		t.Fatalf("create --raw: %v\n%s", err, out)
	}
	// A handler's error comes back as a Status, which kubectl prints whole: the exception and
	// the traceback.
	out, err = kubectl("create", "--raw", fns+"/boom/invoke", "-f", body)
	if err == nil || !strings.Contains(out, "ZeroDivisionError: division by zero") || !strings.Contains(out, "line 3") {
		t.Fatalf("handler error: %v\n%s", err, out)
	}
	out, err = kubectl("create", "--raw", fns+"/missing/invoke", "-f", body)
	if err == nil || !strings.Contains(out, `functions.serverless.minik8s.io "missing" not found`) {
		t.Fatalf("unknown function: %v\n%s", err, out)
	}
	out, err = kubectl("api-resources", "--api-group", "serverless.minik8s.io", "-o", "name")
	if err != nil || !strings.Contains(out, "functions.serverless.minik8s.io") {
		t.Fatalf("api-resources: %v\n%s", err, out)
	}
}
