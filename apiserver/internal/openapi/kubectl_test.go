package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/scheme"
)

const kubectlPath = "/usr/bin/kubectl"

// discovery answers the legacy discovery endpoints kubectl needs before it reads OpenAPI.
func discovery(w http.ResponseWriter, r *http.Request) bool {
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
			for _, res := range scheme.Resources {
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

// TestRealKubectl runs the real kubectl against the documents: explain must find the Pod
// schema, and create with the default --validate=strict must hand validation to the server
// (fieldValidation=Strict on the POST) instead of validating client-side or failing.
func TestRealKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real kubectl")
	}
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Fatalf("this test needs the real kubectl at %s: %v", kubectlPath, err)
	}
	docs := build(t)
	var mu sync.Mutex
	var posted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, Prefix):
			docs.ServeHTTP(w, r)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/default/pods":
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			posted = append(posted, r.URL.RawQuery)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		case r.Method == http.MethodGet && discovery(w, r):
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	dir := t.TempDir()
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kubectlPath, append([]string{"--server", srv.URL, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	t.Run("explain", func(t *testing.T) {
		out := kubectl(t, "explain", "pods.spec.containers")
		for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "List of containers belonging to the pod"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("explain own kind", func(t *testing.T) {
		out := kubectl(t, "explain", "functions.spec")
		if !strings.Contains(out, "handler") || !strings.Contains(out, "Function") {
			t.Errorf("explain output:\n%s", out)
		}
	})
	t.Run("create validates on the server", func(t *testing.T) {
		manifest := filepath.Join(dir, "pod.yaml")
		pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nspec:\n  containers:\n  - name: a\n    image: nginx\n"
		if err := os.WriteFile(manifest, []byte(pod), 0o600); err != nil {
			t.Fatal(err)
		}
		out := kubectl(t, "create", "-f", manifest)
		if !strings.Contains(out, "pod/p created") {
			t.Errorf("create output: %s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(posted) != 1 || !strings.Contains(posted[0], "fieldValidation=Strict") {
			t.Errorf("POST queries = %q, want one with fieldValidation=Strict", posted)
		}
	})
}
