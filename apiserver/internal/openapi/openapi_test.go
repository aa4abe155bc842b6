package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/shared/scheme"
)

func build(t *testing.T) *Documents {
	t.Helper()
	docs, err := Build(scheme.Served(), "v1.32.3")
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return docs
}

// parse decodes a document the way client-go's openapi3 root does.
func parse(t *testing.T, docs *Documents, key string) *spec3.OpenAPI {
	t.Helper()
	d, ok := docs.Get(key)
	if !ok {
		t.Fatalf("no document %q; have %v", key, docs.Keys())
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(d.JSON, &doc); err != nil {
		t.Fatalf("parse %s: %v", key, err)
	}
	return &doc
}

func gvKey(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// supportsFieldValidation is kubectl's check (cli-runtime queryParamVerifierV3) in spirit:
// take any PATCH operation whose GVK extension names the kind, and look for the parameter on
// the operation itself. kubectl stops at the first such PATCH in map order, so every one of
// them has to pass.
func supportsFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) (found int, failed []string) {
	for path, item := range doc.Paths.Paths {
		op := item.Patch
		if op == nil {
			continue
		}
		var ext map[string]string
		if err := op.Extensions.GetObject("x-kubernetes-group-version-kind", &ext); err != nil {
			continue
		}
		if ext["group"] != gvk.Group || ext["version"] != gvk.Version || ext["kind"] != gvk.Kind {
			continue
		}
		found++
		ok := false
		for _, p := range op.Parameters {
			if p.Name == "fieldValidation" {
				ok = true
			}
		}
		if !ok {
			failed = append(failed, path)
		}
	}
	return found, failed
}

func TestRootListsEveryGroupVersion(t *testing.T) {
	docs := build(t)
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(docs.Root(), &root); err != nil {
		t.Fatalf("parse root: %v", err)
	}
	for _, gv := range scheme.GroupVersions() {
		key := gvKey(gv)
		t.Run(key, func(t *testing.T) {
			entry, ok := root.Paths[key]
			if !ok {
				t.Fatalf("root lacks %q", key)
			}
			d, _ := docs.Get(key)
			want := "/openapi/v3/" + key + "?hash=" + d.Hash
			if entry.ServerRelativeURL != want {
				t.Errorf("serverRelativeURL = %q, want %q", entry.ServerRelativeURL, want)
			}
			if len(d.Hash) != 128 || strings.ToUpper(d.Hash) != d.Hash {
				t.Errorf("hash %q is not upper-case hex SHA-512", d.Hash)
			}
		})
	}
	if len(root.Paths) != len(scheme.GroupVersions()) {
		t.Errorf("root has %d paths, want %d", len(root.Paths), len(scheme.GroupVersions()))
	}
}

func TestEveryResourceSupportsServerSideFieldValidation(t *testing.T) {
	docs := build(t)
	for _, r := range scheme.Served() {
		t.Run(r.GVK.String(), func(t *testing.T) {
			doc := parse(t, docs, gvKey(r.GVK.GroupVersion()))
			if doc.Paths == nil {
				t.Fatal("document has no paths")
			}
			found, failed := supportsFieldValidation(doc, r.GVK)
			if found == 0 {
				t.Fatalf("no PATCH operation for %s", r.GVK)
			}
			if len(failed) > 0 {
				t.Errorf("PATCH without fieldValidation: %v", failed)
			}
		})
	}
}

func TestResourcePaths(t *testing.T) {
	docs := build(t)
	for _, r := range scheme.Served() {
		t.Run(r.Plural, func(t *testing.T) {
			doc := parse(t, docs, gvKey(r.GVK.GroupVersion()))
			prefix := "/" + gvKey(r.GVK.GroupVersion())
			collection := prefix + "/" + r.Plural
			if r.Namespaced {
				collection = prefix + "/namespaces/{namespace}/" + r.Plural
			}
			item := collection + "/{name}"
			type verbs struct{ Get, Post, Put, Patch, Delete string }
			actions := func(p *spec3.Path) verbs {
				var v verbs
				for _, x := range []struct {
					op  *spec3.Operation
					dst *string
				}{{p.Get, &v.Get}, {p.Post, &v.Post}, {p.Put, &v.Put}, {p.Patch, &v.Patch}, {p.Delete, &v.Delete}} {
					if x.op != nil {
						*x.dst, _ = x.op.Extensions.GetString("x-kubernetes-action")
					}
				}
				return v
			}
			c, ok := doc.Paths.Paths[collection]
			if !ok {
				t.Fatalf("no path %s", collection)
			}
			wantC := verbs{Get: "list", Post: "post"}
			if r.DeleteCollection {
				wantC.Delete = "deletecollection"
			}
			if diff := cmp.Diff(wantC, actions(c)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", collection, diff)
			}
			i, ok := doc.Paths.Paths[item]
			if !ok {
				t.Fatalf("no path %s", item)
			}
			if diff := cmp.Diff(verbs{Get: "get", Put: "put", Patch: "patch", Delete: "delete"}, actions(i)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", item, diff)
			}
			for _, sub := range r.Subresources {
				if _, ok := doc.Paths.Paths[item+"/"+sub]; !ok {
					t.Errorf("no path for subresource %s", sub)
				}
			}
			// DeleteOptions are optional: kubectl delete sends none.
			for _, o := range []*spec3.Operation{c.Delete, i.Delete} {
				if o != nil && (o.RequestBody == nil || o.RequestBody.Required) {
					t.Errorf("%s: request body %+v, want an optional DeleteOptions", o.OperationId, o.RequestBody)
				}
			}
			if i.Patch.RequestBody == nil {
				t.Fatal("PATCH has no request body")
			}
			var got []string
			for ct := range i.Patch.RequestBody.Content {
				got = append(got, ct)
			}
			if diff := cmp.Diff(patchContentTypes(r), got, sortStrings); diff != "" {
				t.Errorf("patch content types (-want +got):\n%s", diff)
			}
			for _, o := range []*spec3.Operation{c.Post, i.Put, i.Patch} {
				names := map[string]bool{}
				for _, p := range o.Parameters {
					names[p.Name] = p.In == "query"
				}
				for _, want := range []string{"dryRun", "fieldManager", "fieldValidation"} {
					if !names[want] {
						t.Errorf("%s lacks query parameter %s", o.OperationId, want)
					}
				}
			}
		})
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func schemaOf(t *testing.T, doc *spec3.OpenAPI, name string) *spec.Schema {
	t.Helper()
	s, ok := doc.Components.Schemas[name]
	if !ok || s == nil {
		t.Fatalf("no schema %s", name)
	}
	return s
}

// target follows a property's $ref, directly or through the allOf used to keep descriptions.
func target(s spec.Schema) string {
	if ref := s.Ref.String(); ref != "" {
		return ref
	}
	if len(s.AllOf) == 1 {
		return s.AllOf[0].Ref.String()
	}
	return ""
}

func TestPodSchema(t *testing.T) {
	doc := parse(t, build(t), "api/v1")

	pod := schemaOf(t, doc, "io.k8s.api.core.v1.Pod")
	var gvks []map[string]string
	if err := pod.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
		t.Fatalf("pod gvk extension: %v", err)
	}
	if diff := cmp.Diff([]map[string]string{{"group": "", "version": "v1", "kind": "Pod"}}, gvks); diff != "" {
		t.Errorf("pod gvk (-want +got):\n%s", diff)
	}
	for prop, want := range map[string]string{
		"metadata": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"spec":     "#/components/schemas/io.k8s.api.core.v1.PodSpec",
		"status":   "#/components/schemas/io.k8s.api.core.v1.PodStatus",
	} {
		if got := target(pod.Properties[prop]); got != want {
			t.Errorf("pod.%s -> %q, want %q", prop, got, want)
		}
	}
	if _, ok := pod.Properties["apiVersion"]; !ok {
		t.Error("inline TypeMeta not flattened: no apiVersion")
	}

	podSpec := schemaOf(t, doc, "io.k8s.api.core.v1.PodSpec")
	containers := podSpec.Properties["containers"]
	if !containers.Type.Contains("array") || containers.Items == nil || containers.Items.Schema == nil {
		t.Fatalf("containers = %+v, want an array", containers)
	}
	if got := containers.Items.Schema.Ref.String(); got != "#/components/schemas/io.k8s.api.core.v1.Container" {
		t.Errorf("containers items -> %q", got)
	}
	if s, _ := containers.Extensions.GetString("x-kubernetes-patch-merge-key"); s != "name" {
		t.Errorf("containers merge key = %q, want name", s)
	}
	if s, _ := containers.Extensions.GetString("x-kubernetes-patch-strategy"); s != "merge" {
		t.Errorf("containers patch strategy = %q, want merge", s)
	}
	if diff := cmp.Diff([]string{"containers"}, podSpec.Required); diff != "" {
		t.Errorf("PodSpec required (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"name"}, schemaOf(t, doc, "io.k8s.api.core.v1.Container").Required); diff != "" {
		t.Errorf("Container required (-want +got):\n%s", diff)
	}

	cases := []struct {
		name, schema, prop string
		typ, format        string
	}{
		{"int32", "io.k8s.api.core.v1.ContainerPort", "containerPort", "integer", "int32"},
		{"int64 pointer", "io.k8s.api.core.v1.PodSpec", "activeDeadlineSeconds", "integer", "int64"},
		{"bool pointer", "io.k8s.api.core.v1.PodSpec", "hostNetwork", "boolean", ""},
		{"named string", "io.k8s.api.core.v1.PodSpec", "restartPolicy", "string", ""},
		{"map", "io.k8s.api.core.v1.PodSpec", "nodeSelector", "object", ""},
		{"bytes", "io.k8s.api.core.v1.Secret", "data", "object", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := schemaOf(t, doc, tc.schema).Properties[tc.prop]
			if !p.Type.Contains(tc.typ) || p.Format != tc.format {
				t.Errorf("%s.%s = type %v format %q, want %s %q", tc.schema, tc.prop, p.Type, p.Format, tc.typ, tc.format)
			}
		})
	}
	if v := schemaOf(t, doc, "io.k8s.api.core.v1.Secret").Properties["data"].AdditionalProperties; v == nil || v.Schema == nil || v.Schema.Format != "byte" {
		t.Errorf("secret data values = %+v, want string/byte", v)
	}

	if ts := schemaOf(t, doc, "io.k8s.apimachinery.pkg.apis.meta.v1.Time"); !ts.Type.Contains("string") || ts.Format != "date-time" {
		t.Errorf("Time = %v %q, want string date-time", ts.Type, ts.Format)
	}
	for _, name := range []string{"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity"} {
		if v, ok := schemaOf(t, doc, name).Extensions.GetBool("x-kubernetes-int-or-string"); !ok || !v {
			t.Errorf("%s lacks x-kubernetes-int-or-string", name)
		}
	}
	// No served kind embeds RawExtension, so reflect it directly.
	s := newSchemas(v3Dialect)
	if raw := s.defs[s.define(reflect.TypeFor[runtime.RawExtension]())]; !raw.Type.Contains("object") || raw.Properties != nil {
		t.Errorf("RawExtension = %v %v, want a free-form object", raw.Type, raw.Properties)
	}
	// omitempty fields are never required.
	if req := schemaOf(t, doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").Required; len(req) != 0 {
		t.Errorf("ObjectMeta required = %v", req)
	}
}

func TestOwnKindsHaveSchemas(t *testing.T) {
	doc := parse(t, build(t), "apis/serverless.minik8s.io/v1")
	fn := schemaOf(t, doc, "io.minik8s.shared.apis.serverless.v1.Function")
	var gvks []map[string]string
	if err := fn.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil || len(gvks) != 1 || gvks[0]["kind"] != "Function" {
		t.Errorf("function gvk = %v (%v)", gvks, err)
	}
	if got := target(fn.Properties["spec"]); got != "#/components/schemas/io.minik8s.shared.apis.serverless.v1.FunctionSpec" {
		t.Errorf("function spec -> %q", got)
	}
	choice := schemaOf(t, doc, "io.minik8s.shared.apis.serverless.v1.ChoiceRule")
	if p := choice.Properties["numericEquals"]; !p.Type.Contains("number") || p.Format != "double" {
		t.Errorf("numericEquals = %v %q", p.Type, p.Format)
	}
}

func TestServeHTTP(t *testing.T) {
	docs := build(t)
	srv := httptest.NewServer(docs)
	defer srv.Close()
	d, _ := docs.Get("apis/apps/v1")

	get := func(t *testing.T, path string, header map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	cases := []struct {
		name       string
		path       string
		header     map[string]string
		wantStatus int
		wantBody   []byte
		wantCache  string
	}{
		{"root", "/openapi/v3", nil, 200, docs.Root(), "no-cache, private"},
		{"document by current hash", "/openapi/v3/apis/apps/v1?hash=" + d.Hash, nil, 200, d.JSON, "public, immutable, max-age=31536000"},
		{"document without hash", "/openapi/v3/apis/apps/v1", nil, 200, d.JSON, "no-cache, private"},
		{"not modified", "/openapi/v3/apis/apps/v1", map[string]string{"If-None-Match": d.ETag()}, 304, []byte{}, "no-cache, private"},
		{"unknown group", "/openapi/v3/apis/nope/v1", nil, 404, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.path, tc.header)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantBody != nil && string(body) != string(tc.wantBody) {
				t.Errorf("body differs (%d bytes, want %d)", len(body), len(tc.wantBody))
			}
			if got := resp.Header.Get("Cache-Control"); tc.wantCache != "" && got != tc.wantCache {
				t.Errorf("Cache-Control = %q, want %q", got, tc.wantCache)
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, b := build(t), build(t)
	for _, k := range a.Keys() {
		da, _ := a.Get(k)
		db, _ := b.Get(k)
		if da.Hash != db.Hash {
			t.Errorf("%s: hash changed between builds", k)
		}
	}
}

// The real kubectl picks strategic merge for apply when the PATCH operation lists it; our own
// group has no patch strategy tags, so it must not be listed there.
func TestStrategicMergeOnlyForBuiltins(t *testing.T) {
	for _, r := range scheme.Served() {
		got := patchContentTypes(r)
		has := false
		for _, ct := range got {
			has = has || ct == "application/strategic-merge-patch+json"
		}
		if want := r.GVK.Group != "serverless.minik8s.io"; has != want {
			t.Errorf("%s: strategic merge listed %v, want %v", r.Plural, has, want)
		}
	}
}
