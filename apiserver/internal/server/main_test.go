package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage/etcdstore"
	"minik8s.io/apiserver/internal/storage/etcdstore/etcdtest"
	"minik8s.io/apiserver/internal/tables"
)

// testStore is one embedded etcd shared by the tests of this package; each test works in its
// own namespaces.
var testStore *etcdstore.Store

func TestMain(m *testing.M) {
	e, err := etcdtest.New(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded etcd:", err)
		os.Exit(1)
	}
	testStore = e.Store
	code := m.Run()
	e.Close()
	os.Exit(code)
}

type tableConv struct{}

func (tableConv) Convert(obj runtime.Object, include string, now time.Time) (*metav1.Table, error) {
	return tables.For(obj, tables.Options{IncludeObject: metav1.IncludeObjectPolicy(include)}, now)
}

const testToken = "test-token"

// harness is a running API server over the shared etcd.
type harness struct {
	t   testing.TB
	url string
	srv *Server
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newHarnessWith lets a test adjust the configuration before the server is built.
func newHarnessWith(t testing.TB, adjust func(*Config)) *harness {
	t.Helper()
	cfg := Config{
		Store: testStore,
		Authenticator: func(_ context.Context, tok string) (Identity, bool) {
			return Identity{Name: "admin", Groups: []string{"system:masters"}}, tok == testToken
		},
		Tables:                tableConv{},
		Logger:                slog.New(slog.DiscardHandler),
		ExternalAddress:       "127.0.0.1:6443",
		WatchBookmarkInterval: 100 * time.Millisecond,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	srv := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Start(ctx); close(done) }()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
	})
	h := &harness{t: t, url: hs.URL, srv: srv}
	h.eventually("system namespaces exist", func() bool {
		code, _ := h.do("GET", "/api/v1/namespaces/default", "", nil, nil)
		return code == http.StatusOK
	})
	return h
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (h *harness) do(method, path, contentType string, body any, out any, headers ...string) (int, http.Header) {
	h.t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			h.t.Fatal(err)
		}
	}
	if contentType != "" {
		headers = append(headers, "Content-Type", contentType)
	}
	resp, answer := h.send(method, path, data, headers...)
	if out != nil && len(answer) > 0 {
		if err := json.Unmarshal(answer, out); err != nil {
			h.t.Fatalf("%s %s: decode %q: %v", method, path, answer, err)
		}
	}
	return resp.StatusCode, resp.Header
}

// send makes one authenticated request with the given header pairs and reads the answer.
func (h *harness) send(method, path string, body []byte, headers ...string) (*http.Response, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, data
}

// mustDo is do that fails the test unless the status code is want.
func (h *harness) mustDo(want int, method, path, contentType string, body any, out any) {
	h.t.Helper()
	var raw json.RawMessage
	code, _ := h.do(method, path, contentType, body, &raw)
	if code != want {
		h.t.Fatalf("%s %s: got %d, want %d: %s", method, path, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// namespace creates a fresh namespace for one test.
func (h *harness) namespace() string {
	h.t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(h.t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + registry.RandomSuffix()
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces", "", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}, nil)
	return name
}

func podManifest(name string, labels map[string]string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "echo:latest"},
		}},
	}
}
