package imagetest

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/workloads/internal/incluster"
)

// saToken is an unsigned token carrying the claims the program reports.
func saToken(iat int64) string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"iat":%d,"exp":%d,"sub":"system:serviceaccount:imagetest:lister"}`, iat, iat+3607)
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

// testIncluster runs the image as a pod would find itself: a token, CA bundle and namespace at
// /var/run/secrets/kubernetes.io/serviceaccount and KUBERNETES_SERVICE_HOST/PORT naming the
// API (here a TLS server on the host's loopback, so the container shares the host's network).
// It lists pods with the token, reports the refused secrets as 403, and reads the token file
// afresh each round.
func testIncluster(t *testing.T) {
	var (
		mu    sync.Mutex
		authz []string
	)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		authz = append(authz, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/imagetest/pods":
			fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","namespace":"imagetest"}}]}`)
		case "/api/v1/namespaces/imagetest/secrets":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"secrets is forbidden"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	u, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	first := saToken(1000)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	for name, body := range map[string]string{"token": first, "ca.crt": string(ca), "namespace": "imagetest"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := start(t, "--network", "host", "-v", dir+":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"-e", "KUBERNETES_SERVICE_HOST="+u.Hostname(), "-e", "KUBERNETES_SERVICE_PORT="+u.Port(),
		"-e", "INCLUSTER_INTERVAL=500ms", image("incluster"))

	// lastRound is the newest JSON line of the container's log.
	lastRound := func() (incluster.Round, error) {
		logs, err := docker(t.Context(), "logs", id)
		if err != nil {
			return incluster.Round{}, err
		}
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		var r incluster.Round
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			return incluster.Round{}, fmt.Errorf("last line %q: %w", lines[len(lines)-1], err)
		}
		return r, nil
	}
	want := incluster.Round{Pods: 1, PodNames: []string{"imagetest/a"}, SecretsCode: http.StatusForbidden,
		SecretsError: "secrets is forbidden", TokenIat: 1000, TokenExp: 4607, TokenSub: "system:serviceaccount:imagetest:lister",
		Env: map[string]string{"KUBERNETES_SERVICE_HOST": u.Hostname(), "KUBERNETES_SERVICE_PORT": u.Port()}}
	waitFor(t, "a round listing the pod", func() error {
		r, err := lastRound()
		if err != nil {
			return err
		}
		r.Time = 0 // the container's clock
		if diff := cmp.Diff(want, r); diff != "" {
			return fmt.Errorf("round (-want +got):\n%s", diff)
		}
		return nil
	})
	mu.Lock()
	sent := authz[0]
	mu.Unlock()
	if sent != "Bearer "+first {
		t.Errorf("Authorization = %q, want the token file's token", sent)
	}

	// The kubelet replaces the token by renaming a new file into place.
	tmp := filepath.Join(dir, "token.new")
	if err := os.WriteFile(tmp, []byte(saToken(2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "token")); err != nil {
		t.Fatal(err)
	}
	want.TokenIat, want.TokenExp = 2000, 5607
	waitFor(t, "a round reading the new token", func() error {
		r, err := lastRound()
		if err != nil {
			return err
		}
		r.Time = 0 // the container's clock
		if diff := cmp.Diff(want, r); diff != "" {
			return fmt.Errorf("round (-want +got):\n%s", diff)
		}
		return nil
	})
	stopGracefully(t, id)
}
