package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// kubectl proxy's defaults: local hosts only, exec and attach refused, every method.
func TestProxyFilterDefaults(t *testing.T) {
	pf, err := newProxyFilter(defaultProxyFlags())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, host, path string
		want               bool
	}{
		{"GET", "127.0.0.1:8001", "/api/v1/namespaces/default/pods/web/proxy/", true},
		{"POST", "localhost:8001", "/api/v1/namespaces/default/services/web:http/proxy/x", true},
		{"GET", "[::1]", "/api", true},
		{"GET", "example.com:8001", "/api", false},
		{"POST", "127.0.0.1:8001", "/api/v1/namespaces/default/pods/web/exec", false},
		{"GET", "127.0.0.1:8001", "/api/v1/namespaces/default/pods/web/attach", false},
	} {
		r := httptest.NewRequest(tc.method, "http://"+tc.host+tc.path, nil)
		if got := pf.allows(r); got != tc.want {
			t.Errorf("%s %s%s: allows %v, want %v", tc.method, tc.host, tc.path, got, tc.want)
		}
	}
	if _, err := newProxyFilter(proxyFlags{rejectMethods: "("}); err == nil {
		t.Error("a bad regular expression was accepted")
	}
}

func defaultProxyFlags() proxyFlags {
	cmd := newProxy(&options{})
	get := func(name string) string { return cmd.Flags().Lookup(name).DefValue }
	return proxyFlags{apiPrefix: get("api-prefix"), wwwPrefix: get("www-prefix"), acceptHosts: get("accept-hosts"),
		acceptPaths: get("accept-paths"), rejectPaths: get("reject-paths"), rejectMethods: get("reject-methods")}
}

// kubectl proxy passes what its filter allows under the API prefix to the apiserver with the
// kubeconfig's credentials, and serves static files.
func TestProxyHandler(t *testing.T) {
	type seen struct{ method, path, query, auth, host string }
	got := make(chan seen, 1)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Host}
		_, _ = io.WriteString(w, "api")
	}))
	defer api.Close()
	www := t.TempDir()
	writeTestFile(t, filepath.Join(www, "index.txt"), "static")
	apiHost := strings.TrimPrefix(api.URL, "https://")

	for _, tc := range []struct {
		name     string
		adjust   func(*proxyFlags)
		server   string // appended to the apiserver's URL in the kubeconfig
		method   string
		path     string
		host     string
		code     int
		body     string
		upstream *seen
	}{
		{name: "a list", method: "GET", path: "/api/v1/pods?limit=1", host: "127.0.0.1:8001", code: 200, body: "api",
			upstream: &seen{"GET", "/api/v1/pods", "limit=1", "Bearer kubeconfig-token", apiHost}},
		{name: "a service proxy", method: "POST", path: "/api/v1/namespaces/ns/services/web:80/proxy/x/", host: "localhost:8001", code: 200, body: "api",
			upstream: &seen{"POST", "/api/v1/namespaces/ns/services/web:80/proxy/x/", "", "Bearer kubeconfig-token", apiHost}},
		{name: "exec refused", method: "POST", path: "/api/v1/namespaces/ns/pods/p/exec", host: "127.0.0.1:8001", code: 403, body: "Forbidden\n"},
		{name: "foreign host refused", method: "GET", path: "/api/v1/pods", host: "evil.example.com:8001", code: 403, body: "Forbidden\n"},
		{name: "filter disabled", adjust: func(f *proxyFlags) { f.disableFilter = true }, method: "POST", path: "/api/v1/namespaces/ns/pods/p/exec",
			host: "evil.example.com:8001", code: 200, body: "api", upstream: &seen{"POST", "/api/v1/namespaces/ns/pods/p/exec", "", "Bearer kubeconfig-token", apiHost}},
		{name: "api prefix", adjust: func(f *proxyFlags) { f.apiPrefix = "/k8s-api" }, method: "GET", path: "/k8s-api/api/v1/nodes", host: "localhost:8001", code: 200, body: "api",
			upstream: &seen{"GET", "/api/v1/nodes", "", "Bearer kubeconfig-token", apiHost}},
		{name: "outside the api prefix", adjust: func(f *proxyFlags) { f.apiPrefix = "/k8s-api/" }, method: "GET", path: "/api/v1/nodes", host: "localhost:8001", code: 404, body: "404 page not found\n"},
		{name: "server path not appended", server: "/cluster-a", method: "GET", path: "/api/v1/nodes", host: "localhost:8001", code: 200, body: "api",
			upstream: &seen{"GET", "/api/v1/nodes", "", "Bearer kubeconfig-token", apiHost}},
		{name: "server path appended", adjust: func(f *proxyFlags) { f.appendServerPath = true }, server: "/cluster-a", method: "GET", path: "/api/v1/nodes", host: "localhost:8001", code: 200, body: "api",
			upstream: &seen{"GET", "/cluster-a/api/v1/nodes", "", "Bearer kubeconfig-token", apiHost}},
		{name: "static files", adjust: func(f *proxyFlags) { f.www = www }, method: "GET", path: "/static/index.txt", host: "localhost:8001", code: 200, body: "static"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := defaultProxyFlags()
			if tc.adjust != nil {
				tc.adjust(&f)
			}
			cfg := &rest.Config{Host: api.URL + tc.server, BearerToken: "kubeconfig-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			h, err := proxyHandler(cfg, f)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequestWithContext(t.Context(), tc.method, tc.path, nil)
			req.Host = tc.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.code || w.Body.String() != tc.body {
				t.Errorf("%d %q, want %d %q", w.Code, w.Body.String(), tc.code, tc.body)
			}
			select {
			case s := <-got:
				if tc.upstream == nil {
					t.Errorf("the apiserver was sent %+v", s)
				} else if s != *tc.upstream {
					t.Errorf("the apiserver was sent %+v, want %+v", s, *tc.upstream)
				}
			default:
				if tc.upstream != nil {
					t.Errorf("the apiserver was not reached")
				}
			}
		})
	}
}
