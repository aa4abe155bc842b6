package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"minik8s.io/shared/scheme"
)

// cronTabCRD is Kubernetes' documentation example, with a status and scale subresource and
// fields that OpenAPI v2 cannot say as they are.
const cronTabCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com, uid: u1, generation: 1, resourceVersion: "10"}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        description: CronTab runs a command on a schedule.
        properties:
          spec:
            type: object
            required: [cronSpec, note]
            properties:
              cronSpec: {type: string, description: The schedule in cron format., pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'}
              replicas: {type: integer, default: 1}
              note: {type: string, nullable: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {known: {type: string}}}
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

func definition(t *testing.T, manifest string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(manifest), &crd); err != nil {
		t.Fatalf("parse definition: %v", err)
	}
	return &crd
}

// customResource describes one served version of crd as the registry does.
func customResource(crd *apiextensionsv1.CustomResourceDefinition, version string) *scheme.Resource {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
	listGVK := gvk.GroupVersion().WithKind(crd.Spec.Names.ListKind)
	r := &scheme.Resource{GVK: gvk, Plural: crd.Spec.Names.Plural, Singular: crd.Spec.Names.Singular,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, DeleteCollection: true, Custom: true,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{Object: map[string]any{}}
			l.SetGroupVersionKind(listGVK)
			return l
		}}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Subresources != nil {
			if v.Subresources.Status != nil {
				r.Subresources = append(r.Subresources, "status")
			}
			if v.Subresources.Scale != nil {
				r.Subresources = append(r.Subresources, "scale")
			}
		}
	}
	return r
}

// fakeSource serves the built-in kinds and the definitions set on it, counting lookups.
type fakeSource struct {
	mu   sync.Mutex
	crds map[string]*apiextensionsv1.CustomResourceDefinition
}

func newFakeSource(crds ...*apiextensionsv1.CustomResourceDefinition) *fakeSource {
	f := &fakeSource{crds: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	for _, c := range crds {
		f.set(c)
	}
	return f
}

func (f *fakeSource) set(crd *apiextensionsv1.CustomResourceDefinition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crds[crd.Name] = crd
}

func (f *fakeSource) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.crds, name)
}

func (f *fakeSource) Served() []*scheme.Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := scheme.Served()
	names := make([]string, 0, len(f.crds))
	for n := range f.crds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, v := range f.crds[n].Spec.Versions {
			if v.Served {
				out = append(out, customResource(f.crds[n], v.Name))
			}
		}
	}
	return out
}

func (f *fakeSource) Definition(gvr schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, crd := range f.crds {
		if crd.Spec.Group == gvr.Group && crd.Spec.Names.Plural == gvr.Resource {
			return crd, true
		}
	}
	return nil, false
}

var (
	builtinOnce sync.Once
	builtinDocs *Builtin
	builtinErr  error
)

// builtin builds the built-in documents once for all tests here: it takes seconds.
func builtin(t *testing.T) *Builtin {
	t.Helper()
	builtinOnce.Do(func() { builtinDocs, builtinErr = BuildBuiltin(scheme.Served(), testVersion) })
	if builtinErr != nil {
		t.Fatalf("BuildBuiltin: %v", builtinErr)
	}
	return builtinDocs
}

func liveDocuments(t *testing.T, l *Live) *Documents {
	t.Helper()
	docs, err := l.Documents()
	if err != nil {
		t.Fatalf("Documents: %v", err)
	}
	return docs
}

func TestCustomResourceV3Document(t *testing.T) {
	l := NewLive(builtin(t), newFakeSource(definition(t, cronTabCRD)))
	doc := parse(t, liveDocuments(t, l), "apis/stable.example.com/v1")

	t.Run("paths", func(t *testing.T) {
		base := "/apis/stable.example.com/v1"
		ns := base + "/namespaces/{namespace}/crontabs"
		want := map[string][]string{
			base + "/crontabs":    {"get:listStableExampleComV1CronTabForAllNamespaces"},
			ns:                    {"delete:deleteStableExampleComV1CollectionNamespacedCronTab", "get:listStableExampleComV1NamespacedCronTab", "post:createStableExampleComV1NamespacedCronTab"},
			ns + "/{name}":        {"delete:deleteStableExampleComV1NamespacedCronTab", "get:readStableExampleComV1NamespacedCronTab", "patch:patchStableExampleComV1NamespacedCronTab", "put:replaceStableExampleComV1NamespacedCronTab"},
			ns + "/{name}/status": {"get:readStableExampleComV1NamespacedCronTabStatus", "patch:patchStableExampleComV1NamespacedCronTabStatus", "put:replaceStableExampleComV1NamespacedCronTabStatus"},
			ns + "/{name}/scale":  {"get:readStableExampleComV1NamespacedCronTabScale", "patch:patchStableExampleComV1NamespacedCronTabScale", "put:replaceStableExampleComV1NamespacedCronTabScale"},
		}
		got := map[string][]string{}
		for path, item := range doc.Paths.Paths {
			for method, o := range map[string]*spec3.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete} {
				if o != nil {
					got[path] = append(got[path], method+":"+o.OperationId)
				}
			}
			slices.Sort(got[path])
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("paths (-want +got):\n%s", diff)
		}
		list := doc.Paths.Paths[ns].Get
		if ref := list.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); ref != "#/components/schemas/com.example.stable.v1.CronTabList" {
			t.Errorf("list answers %s", ref)
		}
		if found, failed := supportsFieldValidation(doc, schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}); found == 0 || len(failed) > 0 {
			t.Errorf("fieldValidation on %d PATCH operations, missing on %v", found, failed)
		}
		var patchTypes []string
		for ct := range doc.Paths.Paths[ns+"/{name}"].Patch.RequestBody.Content {
			patchTypes = append(patchTypes, ct)
		}
		if slices.Contains(patchTypes, "application/strategic-merge-patch+json") {
			t.Errorf("custom kinds take no strategic merge patch, offered %v", patchTypes)
		}
	})

	t.Run("kind", func(t *testing.T) {
		kind := schemaOf(t, doc, "com.example.stable.v1.CronTab")
		if kind.Description != "CronTab runs a command on a schedule." {
			t.Errorf("description %q", kind.Description)
		}
		if diff := cmp.Diff([]any{map[string]any{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}}, kind.Extensions[extGVK]); diff != "" {
			t.Errorf("gvk (-want +got):\n%s", diff)
		}
		if got := target(kind.Properties["metadata"]); got != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
			t.Errorf("metadata refers to %q", got)
		}
		for _, f := range []string{"apiVersion", "kind"} {
			if p := kind.Properties[f]; !p.Type.Contains("string") || p.Description == "" {
				t.Errorf("%s: %+v", f, p)
			}
		}
		spec := kind.Properties["spec"]
		if got := spec.Properties["cronSpec"]; !got.Type.Contains("string") || got.Pattern == "" || got.Description != "The schedule in cron format." {
			t.Errorf("spec.cronSpec: %+v", got)
		}
		// v3 keeps what was declared.
		if note := spec.Properties["note"]; !note.Nullable || !slices.Equal(spec.Required, []string{"cronSpec", "note"}) {
			t.Errorf("spec.note %+v, required %v", note, spec.Required)
		}
		if tmpl := spec.Properties["template"]; target(tmpl.Properties["metadata"]) == "" || !slices.Contains(tmpl.Required, "apiVersion") {
			t.Errorf("embedded template: %+v", tmpl)
		}
		for _, name := range []string{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", scaleSchema, statusSchema, deleteOptionsSchema} {
			schemaOf(t, doc, name)
		}
	})

	t.Run("list", func(t *testing.T) {
		list := schemaOf(t, doc, "com.example.stable.v1.CronTabList")
		if got := list.Properties["items"].Items.Schema.Ref.String(); got != "#/components/schemas/com.example.stable.v1.CronTab" {
			t.Errorf("items refer to %q", got)
		}
		if got := target(list.Properties["metadata"]); got != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta" {
			t.Errorf("metadata refers to %q", got)
		}
		if diff := cmp.Diff([]any{map[string]any{"group": "stable.example.com", "version": "v1", "kind": "CronTabList"}}, list.Extensions[extGVK]); diff != "" {
			t.Errorf("gvk (-want +got):\n%s", diff)
		}
	})
}

func TestCustomResourceV2(t *testing.T) {
	l := NewLive(builtin(t), newFakeSource(definition(t, cronTabCRD)))
	v2, err := l.V2()
	if err != nil {
		t.Fatalf("V2: %v", err)
	}
	doc := swaggerOf(t, v2)
	kind, ok := doc.Definitions["com.example.stable.v1.CronTab"]
	if !ok {
		t.Fatalf("no definition com.example.stable.v1.CronTab")
	}
	if _, ok := doc.Definitions["io.k8s.api.core.v1.Pod"]; !ok {
		t.Errorf("the built-in kinds are gone from v2")
	}
	if _, ok := doc.Definitions["com.example.stable.v1.CronTabList"]; !ok {
		t.Errorf("no definition com.example.stable.v1.CronTabList")
	}
	if got := target(kind.Properties["metadata"]); got != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Errorf("metadata refers to %q", got)
	}
	sp := kind.Properties["spec"]
	cases := []struct {
		field string
		check func(s spec.Schema) bool
		want  string
	}{
		{"cronSpec", func(s spec.Schema) bool { return s.Type.Contains("string") }, "a string"},
		{"replicas", func(s spec.Schema) bool { return s.Default == nil && s.Type.Contains("integer") }, "an integer without its default"},
		{"note", func(s spec.Schema) bool { return len(s.Type) == 0 && !s.Nullable }, "untyped, without nullable"},
		{"extra", func(s spec.Schema) bool { return len(s.Type) == 0 && s.Properties == nil }, "untyped, without properties"},
		{"size", func(s spec.Schema) bool { return s.AnyOf == nil }, "without anyOf"},
		{"template", func(s spec.Schema) bool { return s.Properties == nil }, "without object fields, since it keeps unknown fields"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			if got := sp.Properties[tc.field]; !tc.check(got) {
				raw, _ := json.Marshal(got)
				t.Errorf("spec.%s is %s, want %s", tc.field, raw, tc.want)
			}
		})
	}
	if !slices.Equal(sp.Required, []string{"cronSpec"}) {
		t.Errorf("spec required %v, want the nullable note dropped", sp.Required)
	}
	item := doc.Paths.Paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
	if item.Get == nil || item.Get.ID != "readStableExampleComV1NamespacedCronTab" {
		t.Errorf("no read operation for crontabs: %+v", item.Get)
	}
	if _, ok := doc.Paths.Paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"]; !ok {
		t.Errorf("no scale path")
	}
}

// TestV2PreserveUnknownRoot: a kind that keeps unknown fields is published to Swagger 2.0
// clients as a bare object, so kubectl's client-side validation accepts any field.
func TestV2PreserveUnknownRoot(t *testing.T) {
	crd := definition(t, strings.Replace(cronTabCRD, "        type: object\n        description:", "        type: object\n        x-kubernetes-preserve-unknown-fields: true\n        description:", 1))
	v2, err := NewLive(builtin(t), newFakeSource(crd)).V2()
	if err != nil {
		t.Fatalf("V2: %v", err)
	}
	kind := swaggerOf(t, v2).Definitions["com.example.stable.v1.CronTab"]
	if len(kind.Properties) != 0 || !kind.Type.Contains("object") || kind.Extensions[extGVK] == nil {
		raw, _ := json.Marshal(kind)
		t.Errorf("kind is %s, want a bare object with its group version kind", raw)
	}
}

// TestLiveCaches: documents are made again only when a definition changes, and only the
// changed group version's.
func TestLiveCaches(t *testing.T) {
	crd := definition(t, cronTabCRD)
	src := newFakeSource(crd)
	l := NewLive(builtin(t), src)
	first := liveDocuments(t, l)
	firstV2, err := l.V2()
	if err != nil {
		t.Fatal(err)
	}
	const key = "apis/stable.example.com/v1"
	before, ok := first.Get(key)
	if !ok {
		t.Fatalf("no %s before the change; have %v", key, first.Keys())
	}
	if again := liveDocuments(t, l); again != first {
		t.Errorf("documents made again with nothing changed")
	}
	if again, _ := l.V2(); again != firstV2 {
		t.Errorf("v2 made again with nothing changed")
	}

	changed := crd.DeepCopy()
	changed.Generation, changed.ResourceVersion = 2, ""
	changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["cronSpec"] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: "When to run."}
	src.set(changed)
	second := liveDocuments(t, l)
	after, _ := second.Get(key)
	if after.Hash == before.Hash {
		t.Errorf("the document's hash stayed %s after its definition changed", after.Hash)
	}
	if !strings.Contains(string(second.Root()), after.Hash) || strings.Contains(string(second.Root()), before.Hash) {
		t.Errorf("the root does not list the new hash: %s", second.Root())
	}
	if !strings.Contains(string(after.JSON), "When to run.") {
		t.Errorf("the document lacks the new description")
	}
	for _, k := range []string{"api/v1", "apis/apps/v1"} {
		a, _ := first.Get(k)
		b, _ := second.Get(k)
		if a != b {
			t.Errorf("%s made again for another group's change", k)
		}
	}
	secondV2, _ := l.V2()
	if secondV2 == firstV2 || !strings.Contains(string(secondV2.JSON()), "When to run.") {
		t.Errorf("v2 not made again after the change")
	}

	src.remove(crd.Name)
	third := liveDocuments(t, l)
	if _, ok := third.Get(key); ok {
		t.Errorf("%s still served after its definition went", key)
	}
	if v2, _ := l.V2(); v2 != builtin(t).v2 {
		t.Errorf("v2 is not the built-in one again without definitions")
	}
}

func TestLiveServesHashes(t *testing.T) {
	l := NewLive(builtin(t), newFakeSource(definition(t, cronTabCRD)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == V2Path {
			l.ServeV2(w, r)
			return
		}
		l.ServeV3(w, r)
	}))
	t.Cleanup(srv.Close)
	get := func(path string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp, []byte(b.String())
	}
	_, rootJSON := get(Prefix)
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rootJSON, &root); err != nil {
		t.Fatal(err)
	}
	url := root.Paths["apis/stable.example.com/v1"].ServerRelativeURL
	if !strings.Contains(url, "?hash=") {
		t.Fatalf("root lists %q for the custom group version", url)
	}
	resp, body := get(url)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || !strings.Contains(string(body), "com.example.stable.v1.CronTab") {
		t.Errorf("GET %s: %d %v", url, resp.StatusCode, resp.Header)
	}
	if resp, _ := get(url, "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET with the ETag: %d, want 304", resp.StatusCode)
	}
	resp, body = get(V2Path, "Accept", MediaTypeJSON)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"com.example.stable.v1.CronTab"`) {
		t.Errorf("GET %s: %d, definition missing", V2Path, resp.StatusCode)
	}
}
