package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/apiserver/internal/openapi"
	"minik8s.io/shared/scheme"
)

var (
	builtinOpenAPIOnce sync.Once
	builtinOpenAPI     *openapi.Builtin
	builtinOpenAPIErr  error
)

// withOpenAPI serves the built-in kinds' documents, generated once for the package's tests.
func withOpenAPI(t *testing.T) func(*Config) {
	t.Helper()
	builtinOpenAPIOnce.Do(func() { builtinOpenAPI, builtinOpenAPIErr = openapi.BuildBuiltin(scheme.Served(), Version.GitVersion) })
	if builtinOpenAPIErr != nil {
		t.Fatalf("build openapi: %v", builtinOpenAPIErr)
	}
	return func(c *Config) { c.OpenAPI = builtinOpenAPI }
}

// openAPIRoot is GET /openapi/v3: the URL of each group version's document.
func (h *harness) openAPIRoot() map[string]string {
	h.t.Helper()
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	h.mustDo(http.StatusOK, "GET", "/openapi/v3", "", nil, &root)
	out := map[string]string{}
	for k, v := range root.Paths {
		out[k] = v.ServerRelativeURL
	}
	return out
}

// TestCustomResourceOpenAPI: a CustomResourceDefinition's versions appear in the OpenAPI
// documents when it is created, change with it, and go with it.
func TestCustomResourceOpenAPI(t *testing.T) {
	h := newHarnessWith(t, withOpenAPI(t))
	group := "crd-openapi.example.com"
	key := "apis/" + group + "/v1"
	kind := "com.example.crd-openapi.v1.Widget"
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + group

	if _, ok := h.openAPIRoot()[key]; ok {
		t.Fatalf("%s listed before its definition", key)
	}
	h.mustDo(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetCRD(group), nil)
	t.Cleanup(func() { h.do("DELETE", crdPath, "", nil, nil) })

	root := h.openAPIRoot()
	url := root[key]
	if !strings.HasPrefix(url, "/openapi/v3/"+key+"?hash=") || root["apis/"+group+"/v1beta1"] == "" || root["api/v1"] == "" {
		t.Fatalf("root after the definition: %v", root)
	}

	t.Run("v3 document", func(t *testing.T) {
		var doc spec3.OpenAPI
		code, header := h.do("GET", url, "", nil, &doc)
		if code != http.StatusOK || !strings.Contains(header.Get("Cache-Control"), "immutable") {
			t.Fatalf("GET %s: %d %v", url, code, header)
		}
		widget, ok := doc.Components.Schemas[kind]
		if !ok {
			t.Fatalf("no schema %s", kind)
		}
		color := widget.Properties["spec"].Properties["color"]
		if !color.Type.Contains("string") || len(color.Enum) != 2 {
			t.Errorf("spec.color: %+v", color)
		}
		if md := widget.Properties["metadata"]; len(md.AllOf) != 1 || md.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
			t.Errorf("metadata: %+v", md)
		}
		if _, ok := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
			t.Errorf("ObjectMeta is not in the document")
		}
		for _, p := range []string{"/" + key + "/namespaces/{namespace}/widgets", "/" + key + "/namespaces/{namespace}/widgets/{name}/scale", "/" + key + "/namespaces/{namespace}/widgets/{name}/status", "/" + key + "/widgets"} {
			if _, ok := doc.Paths.Paths[p]; !ok {
				t.Errorf("no path %s", p)
			}
		}
		if code, _ := h.do("GET", url, "", nil, nil, "If-None-Match", header.Get("ETag")); code != http.StatusNotModified {
			t.Errorf("GET with its ETag: %d, want 304", code)
		}
	})

	t.Run("v2 document", func(t *testing.T) {
		var doc spec.Swagger
		h.mustDo(http.StatusOK, "GET", "/openapi/v2", "", nil, &doc)
		if _, ok := doc.Definitions[kind]; !ok {
			t.Errorf("no definition %s", kind)
		}
		if _, ok := doc.Definitions["io.k8s.api.core.v1.Pod"]; !ok {
			t.Errorf("the built-in definitions are gone")
		}
		if _, ok := doc.Paths.Paths["/"+key+"/namespaces/{namespace}/widgets/{name}"]; !ok {
			t.Errorf("no item path for widgets")
		}
	})

	t.Run("real kubectl explain", func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs the real kubectl")
		}
		path, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skipf("kubectl is not on PATH: %v", err)
		}
		// kubectl sends its token over TLS only.
		tls := httptest.NewTLSServer(h.srv.Handler())
		t.Cleanup(tls.Close)
		for _, tc := range []struct {
			name string
			args []string
			want []string
		}{
			{"v3", []string{"explain", "widgets." + group + ".spec"}, []string{"KIND:       Widget", "GROUP:      " + group, "color\t<string> -required-", "replicas\t<integer>"}},
			{"v2", []string{"explain", "widgets." + group + ".spec", "--output=plaintext-openapiv2"}, []string{"KIND:     Widget", "color\t<string> -required-", "replicas\t<integer>"}},
			{"metadata", []string{"explain", "widgets." + group + ".metadata.labels"}, []string{"Map of string keys and values"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				cmd := exec.CommandContext(t.Context(), path, append([]string{"--server", tls.URL, "--insecure-skip-tls-verify", "--token", testToken,
					"--cache-dir", filepath.Join(dir, "cache")}, tc.args...)...)
				cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"), "HOME="+dir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("kubectl %v: %v\n%s", tc.args, err, out)
				}
				for _, want := range tc.want {
					if !strings.Contains(string(out), want) {
						t.Errorf("kubectl %v lacks %q:\n%s", tc.args, want, out)
					}
				}
			})
		}
	})

	t.Run("a change to the definition changes the hash", func(t *testing.T) {
		patch := `[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size","value":{"type":"string","description":"How big the widget is."}}]`
		h.mustDo(http.StatusOK, "PATCH", crdPath, "application/json-patch+json", patch, nil)
		var changed string
		h.eventually("the root lists a new hash", func() bool {
			changed = h.openAPIRoot()[key]
			return changed != "" && changed != url
		})
		var raw json.RawMessage
		h.mustDo(http.StatusOK, "GET", changed, "", nil, &raw)
		if !strings.Contains(string(raw), "How big the widget is.") {
			t.Errorf("the new document lacks the new field")
		}
		var v2 json.RawMessage
		h.mustDo(http.StatusOK, "GET", "/openapi/v2", "", nil, &v2)
		if !strings.Contains(string(v2), "How big the widget is.") {
			t.Errorf("the v2 document lacks the new field")
		}
	})

	t.Run("gone with its definition", func(t *testing.T) {
		h.mustDo(http.StatusOK, "DELETE", crdPath, "", nil, nil)
		h.eventually("the group version leaves the root", func() bool {
			_, ok := h.openAPIRoot()[key]
			return !ok
		})
		if code, _ := h.do("GET", "/openapi/v3/"+key, "", nil, nil); code != http.StatusNotFound {
			t.Errorf("GET its document after the definition went: %d, want 404", code)
		}
		var v2 json.RawMessage
		h.mustDo(http.StatusOK, "GET", "/openapi/v2", "", nil, &v2)
		if strings.Contains(string(v2), kind) {
			t.Errorf("the v2 document still defines %s", kind)
		}
	})
}
