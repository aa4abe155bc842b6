package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/scheme"
)

// serveDiscovery answers the legacy discovery endpoints kubectl needs before it reads OpenAPI.
func serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	write := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/version":
		write(map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.3"})
	case "/api":
		write(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range scheme.GroupVersions() {
			if gv.Group == "" {
				continue
			}
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		write(list)
	default:
		for _, gv := range scheme.GroupVersions() {
			if r.URL.Path != "/"+gvKey(gv) {
				continue
			}
			list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			for _, res := range scheme.Served() {
				if res.GVK.GroupVersion() == gv {
					list.APIResources = append(list.APIResources, metav1.APIResource{
						Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
						ShortNames: res.ShortNames, Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
					})
				}
			}
			write(list)
			return true
		}
		return false
	}
	return true
}

// kubectlServer serves the v3 documents, the v2 document and discovery to the real kubectl,
// records what it asked for, and accepts pod creations.
type kubectlServer struct {
	url string
	dir string

	mu       sync.Mutex
	posted   []string // query strings of pod POSTs
	v2Accept []string // Accept headers of GET /openapi/v2
}

func startKubectlServer(t *testing.T) *kubectlServer {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real kubectl")
	}
	docs, v2 := build(t), buildV2(t)
	ks := &kubectlServer{dir: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, Prefix):
			docs.ServeHTTP(w, r)
		case r.URL.Path == V2Path:
			ks.mu.Lock()
			ks.v2Accept = append(ks.v2Accept, r.Header.Get("Accept"))
			ks.mu.Unlock()
			v2.ServeHTTP(w, r)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/default/pods":
			body, _ := io.ReadAll(r.Body)
			ks.mu.Lock()
			ks.posted = append(ks.posted, r.URL.RawQuery)
			ks.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		case r.Method == http.MethodGet && serveDiscovery(w, r):
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ks.url = srv.URL
	return ks
}

// kubectl runs the real kubectl against the server, each call with an empty cache, and
// returns its output.
func (ks *kubectlServer) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not on PATH, so the real kubectl cannot be run against the documents: %v", err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), path, append([]string{"--server", ks.url, "--cache-dir", filepath.Join(home, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(home, "none"), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestRealKubectl runs the real kubectl against the documents: explain must find the Pod
// schema, and create with the default --validate=strict must hand validation to the server
// (fieldValidation=Strict on the POST) instead of validating client-side or failing.
func TestRealKubectl(t *testing.T) {
	ks := startKubectlServer(t)

	t.Run("explain", func(t *testing.T) {
		out := ks.kubectl(t, "explain", "pods.spec.containers")
		for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "List of containers belonging to the pod"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("explain own kind", func(t *testing.T) {
		out := ks.kubectl(t, "explain", "functions.spec")
		if !strings.Contains(out, "handler") || !strings.Contains(out, "Function") {
			t.Errorf("explain output:\n%s", out)
		}
	})
	t.Run("create validates on the server", func(t *testing.T) {
		manifest := filepath.Join(ks.dir, "pod.yaml")
		pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nspec:\n  containers:\n  - name: a\n    image: nginx\n"
		if err := os.WriteFile(manifest, []byte(pod), 0o600); err != nil {
			t.Fatal(err)
		}
		out := ks.kubectl(t, "create", "-f", manifest)
		if !strings.Contains(out, "pod/p created") {
			t.Errorf("create output: %s", out)
		}
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if len(ks.posted) != 1 || !strings.Contains(ks.posted[0], "fieldValidation=Strict") {
			t.Errorf("POST queries = %q, want one with fieldValidation=Strict", ks.posted)
		}
	})
}

// TestRealKubectlOpenAPIV2 runs kubectl explain on the v2 document, which kubectl downloads
// as protobuf and walks with the same models its client-side validation and Helm use.
func TestRealKubectlOpenAPIV2(t *testing.T) {
	ks := startKubectlServer(t)
	cases := []struct {
		field string
		want  []string
	}{
		{"pods.spec.containers", []string{"KIND:     Pod", "VERSION:  v1", "RESOURCE: containers <[]Object>",
			"List of containers belonging to the pod", "image\t<string>", "name\t<string> -required-"}},
		{"deployments.spec.replicas", []string{"KIND:     Deployment", "VERSION:  apps/v1", "FIELD:    replicas <integer>",
			"Number of desired pods"}},
		{"services.spec.ports.targetPort", []string{"KIND:     Service", "FIELD:    targetPort <string>", "Number or name of the port"}},
		{"functions.spec", []string{"KIND:     Function", "VERSION:  serverless.minik8s.io/v1", "handler\t<string>"}},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			before := ks.v2Requests()
			out := ks.kubectl(t, "explain", tc.field, "--output=plaintext-openapiv2")
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("explain output lacks %q:\n%s", want, out)
				}
			}
			if after := ks.v2Requests(); len(after) == len(before) {
				t.Errorf("kubectl did not ask for %s", V2Path)
			} else if got := after[len(after)-1]; got != MediaTypeProtobufDeprecated {
				t.Errorf("kubectl sent Accept %q, want %q", got, MediaTypeProtobufDeprecated)
			}
		})
	}
}

func (ks *kubectlServer) v2Requests() []string {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return slices.Clone(ks.v2Accept)
}
