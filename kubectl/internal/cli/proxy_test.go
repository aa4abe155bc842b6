package cli

import (
	"net/http/httptest"
	"testing"
)

// kubectl proxy's defaults: local hosts only, exec and attach refused, every method.
func TestProxyFilterDefaults(t *testing.T) {
	cmd := newProxy(&options{})
	get := func(name string) string { return cmd.Flags().Lookup(name).DefValue }
	pf, err := newProxyFilter(proxyFlags{acceptHosts: get("accept-hosts"), acceptPaths: get("accept-paths"),
		rejectPaths: get("reject-paths"), rejectMethods: get("reject-methods")})
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
