package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"minik8s.io/shared/scheme"
)

const testVersion = "v1.32.3"

func buildV2(t *testing.T) *V2 {
	t.Helper()
	v, err := BuildV2(scheme.Served(), testVersion)
	if err != nil {
		t.Fatalf("BuildV2: %v", err)
	}
	return v
}

// parseV2 decodes the protobuf the way client-go's OpenAPISchema does.
func parseV2(t *testing.T, v *V2) *openapiv2.Document {
	t.Helper()
	doc := &openapiv2.Document{}
	if err := proto.Unmarshal(v.Protobuf(), doc); err != nil {
		t.Fatalf("unmarshal protobuf: %v", err)
	}
	return doc
}

func swaggerOf(t *testing.T, v *V2) *spec.Swagger {
	t.Helper()
	var doc spec.Swagger
	if err := json.Unmarshal(v.JSON(), &doc); err != nil {
		t.Fatalf("parse JSON: %v", err)
	}
	return &doc
}

// generic decodes JSON into maps, slices and float64s, so two encodings compare by content.
func generic(t *testing.T, raw []byte) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out
}

// The protobuf answer is what client-go asks for and parses; its content is the JSON's.
func TestV2ThroughDiscoveryClient(t *testing.T) {
	v := buildV2(t)
	var mu sync.Mutex
	var accepts, contentTypes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.ServeHTTP(w, r)
		mu.Lock()
		defer mu.Unlock()
		accepts = append(accepts, r.Header.Get("Accept"))
		contentTypes = append(contentTypes, w.Header().Get("Content-Type"))
	}))
	defer srv.Close()

	doc, err := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	mu.Lock()
	if diff := cmp.Diff([]string{MediaTypeProtobuf}, contentTypes); diff != "" {
		t.Errorf("answered content types (-want +got), client sent Accept %q:\n%s", accepts, diff)
	}
	mu.Unlock()

	got := struct{ Swagger, Title, Version, Security string }{
		doc.GetSwagger(), doc.GetInfo().GetTitle(), doc.GetInfo().GetVersion(),
		doc.GetSecurityDefinitions().GetAdditionalProperties()[0].GetName(),
	}
	if diff := cmp.Diff(struct{ Swagger, Title, Version, Security string }{"2.0", "Kubernetes", testVersion, "BearerToken"}, got); diff != "" {
		t.Errorf("document header (-want +got):\n%s", diff)
	}

	fromProto, err := doc.YAMLValue("")
	if err != nil {
		t.Fatalf("protobuf document as YAML: %v", err)
	}
	asJSON, err := yaml.YAMLToJSON(fromProto)
	if err != nil {
		t.Fatalf("protobuf document's YAML as JSON: %v", err)
	}
	if diff := cmp.Diff(generic(t, v.JSON()), generic(t, asJSON)); diff != "" {
		t.Errorf("protobuf content differs from the JSON (-json +protobuf):\n%s", diff)
	}
}

func TestV2ServeHTTP(t *testing.T) {
	v := buildV2(t)
	srv := httptest.NewServer(v)
	defer srv.Close()
	jsonETag, pbETag := v.json.etag, v.protobuf.etag
	if jsonETag == pbETag {
		t.Fatalf("JSON and protobuf share the ETag %s", jsonETag)
	}

	cases := []struct {
		name       string
		method     string
		path       string
		header     map[string]string
		wantStatus int
		wantType   string
		wantETag   string
		wantBody   []byte
	}{
		{"no Accept is JSON", "GET", V2Path, nil, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"JSON", "GET", V2Path, map[string]string{"Accept": "application/json"}, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"client-go's protobuf name", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobufDeprecated}, 200, MediaTypeProtobuf, pbETag, v.Protobuf()},
		{"protobuf", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobuf}, 200, MediaTypeProtobuf, pbETag, v.Protobuf()},
		{"protobuf preferred by quality", "GET", V2Path, map[string]string{"Accept": "application/json;q=0.5, " + MediaTypeProtobuf}, 200, MediaTypeProtobuf, pbETag, v.Protobuf()},
		{"JSON preferred by quality", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobuf + ";q=0.2, application/json;q=0.9"}, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"protobuf before a wildcard", "GET", V2Path, map[string]string{"Accept": "*/*, " + MediaTypeProtobufDeprecated}, 200, MediaTypeProtobuf, pbETag, v.Protobuf()},
		{"protobuf refused", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobuf + ";q=0"}, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"unknown type is JSON", "GET", V2Path, map[string]string{"Accept": "text/html"}, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"JSON not modified", "GET", V2Path, map[string]string{"If-None-Match": jsonETag}, 304, "", jsonETag, []byte{}},
		{"protobuf not modified", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobufDeprecated, "If-None-Match": pbETag}, 304, "", pbETag, []byte{}},
		{"JSON's ETag does not match protobuf", "GET", V2Path, map[string]string{"Accept": MediaTypeProtobufDeprecated, "If-None-Match": jsonETag}, 200, MediaTypeProtobuf, pbETag, v.Protobuf()},
		{"stale ETag", "GET", V2Path, map[string]string{"If-None-Match": `"0"`}, 200, MediaTypeJSON, jsonETag, v.JSON()},
		{"HEAD", "HEAD", V2Path, nil, 200, MediaTypeJSON, jsonETag, []byte{}},
		{"POST", "POST", V2Path, nil, 405, "", "", nil},
		{"other path", "GET", V2Path + "/x", nil, 404, "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, val := range tc.header {
				req.Header.Set(k, val)
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
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus >= 400 {
				return
			}
			if got := resp.Header.Get("Content-Type"); tc.wantType != "" && got != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantType)
			}
			if got := resp.Header.Get("ETag"); got != tc.wantETag {
				t.Errorf("ETag = %q, want %q", got, tc.wantETag)
			}
			if got := resp.Header.Values("Vary"); !slices.Contains(got, "Accept") {
				t.Errorf("Vary = %q, want Accept", got)
			}
			if tc.method == "HEAD" && resp.ContentLength != int64(len(v.JSON())) {
				t.Errorf("HEAD Content-Length = %d, want %d", resp.ContentLength, len(v.JSON()))
			}
			if string(body) != string(tc.wantBody) {
				t.Errorf("body differs (%d bytes, want %d)", len(body), len(tc.wantBody))
			}
		})
	}
}

func typeOf(t *testing.T, v any) reflect.Type {
	t.Helper()
	typ, err := structType(v)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestV2ResourcePaths(t *testing.T) {
	doc := swaggerOf(t, buildV2(t))
	ids := map[string]string{}
	for path, item := range doc.Paths.Paths {
		for _, o := range []*spec.Operation{item.Get, item.Put, item.Post, item.Patch, item.Delete} {
			if o == nil {
				continue
			}
			if other, ok := ids[o.ID]; ok {
				t.Errorf("operationId %s on both %s and %s", o.ID, other, path)
			}
			ids[o.ID] = path
		}
	}

	type opSummary struct {
		Action, GVK        string
		Body               string // $ref of the body parameter
		BodyRequired       bool
		Consumes, Produces []string
		Query              []string // the write query parameters it takes
		OK                 string   // $ref of the 200 response
	}
	summarize := func(o *spec.Operation) *opSummary {
		if o == nil {
			return nil
		}
		s := &opSummary{Consumes: o.Consumes, Produces: o.Produces}
		s.Action, _ = o.Extensions.GetString("x-kubernetes-action")
		var gvk map[string]string
		if err := o.Extensions.GetObject(extGVK, &gvk); err != nil {
			t.Errorf("%s: GVK extension: %v", o.ID, err)
		}
		s.GVK = schema.GroupVersionKind{Group: gvk["group"], Version: gvk["version"], Kind: gvk["kind"]}.String()
		for _, p := range o.Parameters {
			switch {
			case p.In == "body":
				s.Body, s.BodyRequired = p.Schema.Ref.String(), p.Required
			case p.In == "query" && slices.Contains([]string{"dryRun", "fieldManager", "fieldValidation"}, p.Name):
				s.Query = append(s.Query, p.Name)
			}
		}
		if ok, found := o.Responses.StatusCodeResponses[200]; found && ok.Schema != nil {
			s.OK = ok.Schema.Ref.String()
		}
		return s
	}

	write := []string{"dryRun", "fieldManager", "fieldValidation"}
	answers := []string{"application/json", "application/yaml"}
	for _, r := range scheme.Served() {
		t.Run(r.Plural, func(t *testing.T) {
			gv := r.GVK.GroupVersion()
			prefix := "/" + gvKey(gv)
			collection := prefix + "/" + r.Plural
			if r.Namespaced {
				collection = prefix + "/namespaces/{namespace}/" + r.Plural
			}
			item := collection + "/{name}"
			kindRef := "#/definitions/" + canonicalName(typeOf(t, r.New()))
			listRef := "#/definitions/" + canonicalName(typeOf(t, r.NewList()))
			gvk := r.GVK.String()
			want := map[string]map[string]*opSummary{
				collection: {
					"get":  {Action: "list", GVK: gvk, Produces: answers, OK: listRef},
					"post": {Action: "post", GVK: gvk, Body: kindRef, BodyRequired: true, Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: kindRef},
				},
				item: {
					"get":    {Action: "get", GVK: gvk, Produces: answers, OK: kindRef},
					"put":    {Action: "put", GVK: gvk, Body: kindRef, BodyRequired: true, Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: kindRef},
					"patch":  {Action: "patch", GVK: gvk, Body: "#/definitions/" + patchSchema, BodyRequired: true, Consumes: patchContentTypes(r), Produces: answers, Query: write, OK: kindRef},
					"delete": {Action: "delete", GVK: gvk, Body: "#/definitions/" + deleteOptionsSchema, Consumes: []string{"*/*"}, Produces: answers, Query: []string{"dryRun"}, OK: kindRef},
				},
			}
			if r.DeleteCollection {
				want[collection]["delete"] = &opSummary{Action: "deletecollection", GVK: gvk, Body: "#/definitions/" + deleteOptionsSchema,
					Consumes: []string{"*/*"}, Produces: answers, Query: []string{"dryRun"}, OK: "#/definitions/" + statusSchema}
			}
			for _, sub := range r.Subresources {
				switch sub {
				case "status", "ephemeralcontainers":
					want[item+"/"+sub] = map[string]*opSummary{
						"get":   want[item]["get"],
						"put":   want[item]["put"],
						"patch": want[item]["patch"],
					}
				case "scale":
					scale := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}.String()
					ref := "#/definitions/" + scaleSchema
					want[item+"/scale"] = map[string]*opSummary{
						"get":   {Action: "get", GVK: scale, Produces: answers, OK: ref},
						"put":   {Action: "put", GVK: scale, Body: ref, BodyRequired: true, Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: ref},
						"patch": {Action: "patch", GVK: scale, Body: "#/definitions/" + patchSchema, BodyRequired: true, Consumes: patchContentTypes(r), Produces: answers, Query: write, OK: ref},
					}
				case "binding":
					ref := "#/definitions/" + bindingSchema
					want[item+"/binding"] = map[string]*opSummary{"post": {Action: "post", GVK: "/v1, Kind=Binding", Body: ref, BodyRequired: true,
						Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: ref}}
				case "log":
					want[item+"/log"] = map[string]*opSummary{"get": {Action: "get", GVK: gvk, Produces: []string{"text/plain"}}}
				case "eviction":
					ref := "#/definitions/" + evictionSchema
					want[item+"/eviction"] = map[string]*opSummary{"post": {Action: "post", GVK: "policy/v1, Kind=Eviction", Body: ref, BodyRequired: true,
						Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: ref}}
				case "exec", "attach", "portforward":
					options := map[string]string{"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}[sub]
					connect := &opSummary{Action: "connect", GVK: "/v1, Kind=" + options, Produces: []string{"*/*"}}
					want[item+"/"+sub] = map[string]*opSummary{"get": connect, "post": connect}
				case "proxy":
					connect := &opSummary{Action: "connect", GVK: "/v1, Kind=" + r.GVK.Kind + "ProxyOptions", Produces: []string{"*/*"}}
					for _, path := range []string{item + "/proxy", item + "/proxy/{path}"} {
						want[path] = map[string]*opSummary{"get": connect, "put": connect, "post": connect, "patch": connect, "delete": connect}
					}
				case "token":
					ref := "#/definitions/" + tokenRequestSchema
					want[item+"/token"] = map[string]*opSummary{"post": {Action: "post", GVK: "authentication.k8s.io/v1, Kind=TokenRequest", Body: ref, BodyRequired: true,
						Consumes: []string{"*/*"}, Produces: answers, Query: write, OK: ref}}
				case "invoke":
					want[item+"/invoke"] = map[string]*opSummary{"post": {Action: "connect", GVK: gvk, Produces: []string{"application/json"}}}
				default:
					t.Errorf("subresource %s: no expectation; teach this test and resourceRoutes about it", sub)
				}
			}
			for path, ops := range want {
				p, ok := doc.Paths.Paths[path]
				if !ok {
					t.Errorf("no path %s", path)
					continue
				}
				got := map[string]*opSummary{}
				for method, o := range map[string]*spec.Operation{"get": p.Get, "put": p.Put, "post": p.Post, "patch": p.Patch, "delete": p.Delete} {
					if s := summarize(o); s != nil {
						got[method] = s
					}
				}
				if diff := cmp.Diff(ops, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

// The v2 document holds the schemas of all v3 documents under the same names, with the
// differences Swagger 2.0 asks for.
func TestV2Definitions(t *testing.T) {
	v2 := swaggerOf(t, buildV2(t))
	docs := build(t)
	v3 := map[string]bool{}
	for _, k := range docs.Keys() {
		for name := range parse(t, docs, k).Components.Schemas {
			v3[name] = true
		}
	}
	v2names := map[string]bool{}
	for name := range v2.Definitions {
		v2names[name] = true
	}
	if diff := cmp.Diff(v3, v2names); diff != "" {
		t.Errorf("definitions differ from the v3 components (-v3 +v2):\n%s", diff)
	}

	def := func(name string) spec.Schema {
		t.Helper()
		s, ok := v2.Definitions[name]
		if !ok {
			t.Fatalf("no definition %s", name)
		}
		return s
	}
	pod := def("io.k8s.api.core.v1.Pod")
	if m := pod.Properties["metadata"]; m.Ref.String() != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" || !strings.Contains(m.Description, "metadata") || len(m.AllOf) != 0 {
		t.Errorf("pod.metadata = ref %q description %q allOf %v, want a described $ref", m.Ref.String(), m.Description, m.AllOf)
	}
	containers := def("io.k8s.api.core.v1.PodSpec").Properties["containers"]
	strategy, _ := containers.Extensions.GetString(extPatchStrategy)
	mergeKey, _ := containers.Extensions.GetString(extPatchMergeKey)
	if strategy != "merge" || mergeKey != "name" || containers.Items.Schema.Ref.String() != "#/definitions/io.k8s.api.core.v1.Container" {
		t.Errorf("containers = strategy %q key %q items %q", strategy, mergeKey, containers.Items.Schema.Ref.String())
	}

	type scalar struct {
		Type, Format string
		IntOrString  bool
	}
	for name, want := range map[string]scalar{
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"string", "int-or-string", true},
		"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"string", "", true},
		"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       {"string", "date-time", false},
		"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":  {"string", "date-time", false},
	} {
		s := def(name)
		got := scalar{Format: s.Format}
		if len(s.Type) == 1 {
			got.Type = s.Type[0]
		}
		got.IntOrString, _ = s.Extensions.GetBool(extIntOrString)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}

	var deleteGVKs []map[string]string
	if err := def(deleteOptionsSchema).Extensions.GetObject(extGVK, &deleteGVKs); err != nil {
		t.Fatalf("DeleteOptions GVKs: %v", err)
	}
	var got, want []string
	for _, e := range deleteGVKs {
		got = append(got, schema.GroupVersion{Group: e["group"], Version: e["version"]}.String())
	}
	for _, gv := range scheme.GroupVersions() {
		want = append(want, gv.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeleteOptions group versions (-want +got):\n%s", diff)
	}
}
