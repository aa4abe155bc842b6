package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
)

func TestSelfSubjectReview(t *testing.T) {
	h := newHarnessWith(t, func(cfg *Config) {
		cfg.Authenticator = func(_ context.Context, tok string) (Identity, bool) {
			switch tok {
			case testToken:
				return Identity{Name: "admin", Groups: []string{"system:masters"}}, true
			case "serverless":
				return Identity{Name: "system:serverless"}, true
			}
			return Identity{}, false
		}
	})
	const path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	var got authnv1.SelfSubjectReview
	h.mustDo(http.StatusCreated, "POST", path, "application/json", body, &got)
	if got.Kind != "SelfSubjectReview" || got.APIVersion != "authentication.k8s.io/v1" {
		t.Errorf("type %s %s", got.APIVersion, got.Kind)
	}
	want := authnv1.UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	if d := cmp.Diff(want, got.Status.UserInfo); d != "" {
		t.Errorf("admin (-want +got):\n%s", d)
	}
	resp, answer := h.send("POST", path, []byte(body), "Authorization", "Bearer serverless", "Content-Type", "application/json")
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(answer), `"username":"system:serverless"`) {
		t.Errorf("serverless: %d %s", resp.StatusCode, answer)
	}
	resp, _ = h.send("POST", path, []byte(body), "Authorization", "Bearer nope")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token: %d, want 401", resp.StatusCode)
	}
	if code, _ := h.do("GET", path, "", nil, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", code)
	}
}

// The scheme of the Authorization header is read in any case, as Kubernetes reads it: the
// official Python client sends "bearer".
func TestBearerSchemeAnyCase(t *testing.T) {
	h := newHarness(t)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		resp, _ := h.send("GET", "/api/v1/namespaces/default", nil, "Authorization", scheme+" "+testToken)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", scheme, resp.StatusCode)
		}
	}
	for _, header := range []string{"Basic " + testToken, "Bearer", "Bearer  ", testToken} {
		resp, _ := h.send("GET", "/api/v1/namespaces/default", nil, "Authorization", header)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: %d, want 401", header, resp.StatusCode)
		}
	}
}
