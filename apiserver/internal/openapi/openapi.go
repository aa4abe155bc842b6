package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"sort"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/shared/scheme"
)

// Prefix is where the documents are served.
const Prefix = "/openapi/v3"

// Document is the OpenAPI document of one group version, encoded once.
type Document struct {
	// Key is the path below Prefix: "api/v1", "apis/apps/v1".
	Key string
	// JSON is the document.
	JSON []byte
	// Hash is the upper-case hex SHA-512 of JSON, as Kubernetes computes it; it goes into the
	// URL the root lists, so clients may cache a document forever under that URL.
	Hash string
}

// ETag is the HTTP entity tag of the document.
func (d *Document) ETag() string { return `"` + d.Hash + `"` }

// Documents are all documents plus the root index that lists them.
type Documents struct {
	root  []byte
	byKey map[string]*Document
}

// Root is the JSON answer to GET /openapi/v3.
func (d *Documents) Root() []byte { return d.root }

// Get returns the document served at Prefix + "/" + key.
func (d *Documents) Get(key string) (*Document, bool) {
	doc, ok := d.byKey[strings.Trim(key, "/")]
	return doc, ok
}

// Keys lists the served document keys in order.
func (d *Documents) Keys() []string {
	keys := make([]string, 0, len(d.byKey))
	for k := range d.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Build generates the documents of every group version in resources. version is the server
// version shown in each document's info. Custom resources are left out: Live adds them.
func Build(resources []*scheme.Resource, version string) (*Documents, error) {
	docs := &Documents{byKey: map[string]*Document{}}
	for gv, rs := range byGroupVersion(resources) {
		d, err := encodeGroupVersion(gv, rs, version, nil)
		if err != nil {
			return nil, err
		}
		docs.byKey[d.Key] = d
	}
	if err := docs.index(); err != nil {
		return nil, err
	}
	return docs, nil
}

// byGroupVersion groups resources by their group version, in their order.
func byGroupVersion(resources []*scheme.Resource) map[schema.GroupVersion][]*scheme.Resource {
	out := map[schema.GroupVersion][]*scheme.Resource{}
	for _, r := range resources {
		gv := r.GVK.GroupVersion()
		out[gv] = append(out[gv], r)
	}
	return out
}

// encodeGroupVersion builds and encodes the document of one group version, taking custom
// resources' schemas from defs.
func encodeGroupVersion(gv schema.GroupVersion, resources []*scheme.Resource, version string, defs Definitions) (*Document, error) {
	doc, err := buildGroupVersion(resources, version, defs)
	if err != nil {
		return nil, fmt.Errorf("openapi for %s: %w", gv, err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode openapi for %s: %w", gv, err)
	}
	return &Document{Key: groupVersionPath(gv), JSON: raw, Hash: fmt.Sprintf("%X", sha512.Sum512(raw))}, nil
}

// index writes the root that lists every document under a URL naming its hash.
func (d *Documents) index() error {
	index := make(map[string]map[string]string, len(d.byKey))
	for key, doc := range d.byKey {
		index[key] = map[string]string{"serverRelativeURL": Prefix + "/" + key + "?hash=" + doc.Hash}
	}
	root, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return fmt.Errorf("encode openapi root: %w", err)
	}
	d.root = root
	return nil
}

func buildGroupVersion(resources []*scheme.Resource, version string, defs Definitions) (*spec3.OpenAPI, error) {
	s := newSchemas(v3Dialect)
	routes, err := collect(s, resources, defs)
	if err != nil {
		return nil, err
	}
	paths := make(map[string]*spec3.Path, len(routes))
	for path, rt := range routes {
		paths[path] = rt.v3()
	}
	return &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: toPointers(s.defs)},
	}, nil
}

// collect reflects the kinds of resources, and those their operations use, into s and lists
// the routes that serve them. Custom resources take their schemas from their definitions
// in defs; one defs does not know is left out.
func collect(s *schemas, resources []*scheme.Resource, defs Definitions) (map[string]*route, error) {
	routes := map[string]*route{}
	// Shared kinds every group's operations use; Kubernetes tags DeleteOptions with each
	// group's version, since clients send it to any group.
	s.setGVK(reflect.TypeFor[metav1.Status](), schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	s.defs[patchSchema] = spec.Schema{SchemaProps: spec.SchemaProps{
		Type:        []string{"object"},
		Description: "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
	}}

	for _, r := range resources {
		gv := r.GVK.GroupVersion()
		if r.Custom {
			var crd *apiextensionsv1.CustomResourceDefinition
			if defs != nil {
				crd, _ = defs(r.GVR())
			}
			if crd == nil {
				// Its definition went between listing and this lookup.
				continue
			}
			s.setGVK(reflect.TypeFor[metav1.DeleteOptions](), gv.WithKind("DeleteOptions"))
			kind, list, err := s.defineCustom(r, crd)
			if err != nil {
				return nil, err
			}
			if r.HasSubresource("scale") {
				s.setGVK(reflect.TypeFor[autoscalingv1.Scale](), autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
			}
			maps.Copy(routes, resourceRoutes("/"+groupVersionPath(gv), r, kind, list))
			continue
		}
		s.setGVK(reflect.TypeFor[metav1.DeleteOptions](), gv.WithKind("DeleteOptions"))
		objType, err := structType(r.New())
		if err != nil {
			return nil, err
		}
		listType, err := structType(r.NewList())
		if err != nil {
			return nil, err
		}
		kind := s.setGVK(objType, r.GVK)
		list := s.setGVK(listType, gv.WithKind(r.GVK.Kind+"List"))
		if r.HasSubresource("scale") {
			s.setGVK(reflect.TypeFor[autoscalingv1.Scale](), autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		}
		if r.HasSubresource("binding") {
			s.setGVK(reflect.TypeFor[corev1.Binding](), corev1.SchemeGroupVersion.WithKind("Binding"))
		}
		if r.HasSubresource("eviction") {
			s.setGVK(reflect.TypeFor[policyv1.Eviction](), policyv1.SchemeGroupVersion.WithKind("Eviction"))
		}
		if r.HasSubresource("token") {
			s.setGVK(reflect.TypeFor[authnv1.TokenRequest](), authnv1.SchemeGroupVersion.WithKind("TokenRequest"))
		}
		maps.Copy(routes, resourceRoutes("/"+groupVersionPath(gv), r, kind, list))
	}
	return routes, nil
}

// groupVersionPath is where a group version is served: "api/v1", "apis/apps/v1".
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func toPointers(defs map[string]spec.Schema) map[string]*spec.Schema {
	out := make(map[string]*spec.Schema, len(defs))
	for k := range defs {
		v := defs[k]
		out[k] = &v
	}
	return out
}

// ServeHTTP answers GET Prefix and GET Prefix/<key>, with ETags and, when the request names
// the current hash, caching for good (the URL changes whenever the document does).
func (d *Documents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.Trim(rest, "/") == "" {
		w.Header().Set("Cache-Control", "no-cache, private")
		_, _ = w.Write(d.root)
		return
	}
	doc, ok := d.Get(rest)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", doc.ETag())
	if r.URL.Query().Get("hash") == doc.Hash {
		w.Header().Set("Cache-Control", "public, immutable, max-age=31536000")
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && match == doc.ETag() {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(doc.JSON)
}
