package echo

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIdentityFromEnv(t *testing.T) {
	addrs := []net.Addr{
		&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
		&net.IPNet{IP: net.ParseIP("10.244.1.7"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("172.17.0.2"), Mask: net.CIDRMask(16, 32)},
	}
	tests := []struct {
		name  string
		env   map[string]string
		addrs []net.Addr
		want  Identity
	}{
		{
			name:  "downward API variables win",
			env:   map[string]string{"POD_IP": "10.244.3.3", "POD_NAME": "web-1", "POD_NAMESPACE": "demo", "NODE_NAME": "node-a"},
			addrs: addrs,
			want:  Identity{Hostname: "web-1", PodIP: "10.244.3.3", PodName: "web-1", PodNamespace: "demo", NodeName: "node-a"},
		},
		{
			name:  "first non-loopback IPv4 without POD_IP",
			env:   map[string]string{},
			addrs: addrs,
			want:  Identity{Hostname: "web-1", PodIP: "10.244.1.7"},
		},
		{
			name:  "IPAddr values count too",
			addrs: []net.Addr{&net.IPAddr{IP: net.ParseIP("192.0.2.9")}},
			want:  Identity{Hostname: "web-1", PodIP: "192.0.2.9"},
		},
		{
			name:  "only loopback leaves the IP empty",
			addrs: addrs[:2],
			want:  Identity{Hostname: "web-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IdentityFromEnv(func(k string) string { return tt.env[k] }, "web-1", tt.addrs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("IdentityFromEnv() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEcho(t *testing.T) {
	id := Identity{Hostname: "web-1", PodIP: "10.244.1.7", PodName: "web-1", PodNamespace: "demo", NodeName: "node-a"}
	tests := []struct {
		name   string
		method string
		target string
		header http.Header
		want   Reply
	}{
		{
			name:   "root",
			method: http.MethodGet,
			target: "/",
			header: http.Header{"X-Test": {"a", "b"}},
			want:   Reply{Method: "GET", Path: "/", Headers: map[string][]string{"X-Test": {"a", "b"}}},
		},
		{
			name:   "any path and query",
			method: http.MethodPost,
			target: "/some/where?x=1&y=2",
			want:   Reply{Method: "POST", Path: "/some/where", Query: "x=1&y=2", Headers: map[string][]string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			NewHandler(id).ServeHTTP(rec, req)

			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got Reply
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("decode %s: %v", rec.Body, err)
			}
			want := tt.want
			want.Hostname, want.PodIP, want.PodName, want.PodNamespace, want.NodeName =
				id.Hostname, id.PodIP, id.PodName, id.PodNamespace, id.NodeName
			want.RemoteAddr = req.RemoteAddr
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealthzSwitch(t *testing.T) {
	h := NewHandler(Identity{Hostname: "h"})
	steps := []struct {
		method, path string
		wantCode     int
	}{
		{http.MethodGet, "/healthz", http.StatusOK},
		{http.MethodPost, "/healthz/fail", http.StatusInternalServerError},
		{http.MethodGet, "/healthz", http.StatusInternalServerError},
		{http.MethodPost, "/healthz/ok", http.StatusOK},
		{http.MethodGet, "/healthz", http.StatusOK},
		// GET on the switch is the echo, not a switch: a stray probe must not flip health.
		{http.MethodGet, "/healthz/fail", http.StatusOK},
		{http.MethodGet, "/healthz", http.StatusOK},
	}
	for i, s := range steps {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(s.method, s.path, nil))
		if rec.Code != s.wantCode {
			t.Fatalf("step %d: %s %s = %d, want %d", i, s.method, s.path, rec.Code, s.wantCode)
		}
	}
}

func TestMetrics(t *testing.T) {
	h := NewHandler(Identity{Hostname: "h"})
	for _, p := range []string{"/", "/metrics", "/a"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/healthz/fail", nil))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want Prometheus' text format", ct)
	}
	body := rec.Body.String()
	// Three echoes; the health switch and the scrape are not echoes.
	for _, want := range []string{"\necho_requests_total 3\n", "\necho_healthy 0\n", "# TYPE echo_healthy gauge\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
