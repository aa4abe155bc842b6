package openapi

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/scheme"
)

// Source is what the apiserver serves at the moment: the registry.
type Source interface {
	// Served lists the built-in resources and those CustomResourceDefinitions serve.
	Served() []*scheme.Resource
	// Definition is the CustomResourceDefinition serving a custom resource.
	Definition(schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, bool)
}

// Builtin are the documents of the built-in kinds, generated once at start.
type Builtin struct {
	v3      *Documents
	v2      *V2
	version string
}

// BuildBuiltin generates the v3 and v2 documents of the built-in resources. version is the
// server version shown in their info.
func BuildBuiltin(resources []*scheme.Resource, version string) (*Builtin, error) {
	v3, err := Build(resources, version)
	if err != nil {
		return nil, err
	}
	v2, err := BuildV2(resources, version)
	if err != nil {
		return nil, err
	}
	return &Builtin{v3: v3, v2: v2, version: version}, nil
}

// Live serves the documents of what its source serves at each request: the built-in kinds'
// as generated at start, and those of the group versions custom resources are in, generated
// when first asked for after their definitions changed. What it generated stays until a
// definition changes again: a request with no change only compares a key.
type Live struct {
	src     Source
	builtin *Builtin

	// mu guards the cached documents; it is held while they are generated, so that
	// concurrent requests after a change generate them once.
	mu    sync.Mutex
	v3Key string
	v3    *Documents
	// custom are the documents of group versions with custom resources, each with the key
	// of its custom resources, so that one definition's change regenerates its group
	// version alone.
	custom map[string]customDocument
	v2Key  string
	v2     *V2
}

type customDocument struct {
	key string
	doc *Document
}

// NewLive serves builtin with the custom resources of src added.
func NewLive(builtin *Builtin, src Source) *Live {
	return &Live{src: src, builtin: builtin, v3: builtin.v3, v2: builtin.v2}
}

// snapshot is what is served at one moment, with the keys that tell whether documents made
// from it are current.
type snapshot struct {
	resources []*scheme.Resource
	defs      map[schema.GroupVersionResource]*apiextensionsv1.CustomResourceDefinition
	// key changes whenever any custom resource or its definition does; "" without any.
	key string
	// groupVersions are the keys of the custom resources of each group version they are in.
	groupVersions map[schema.GroupVersion]string
}

func (s *snapshot) definition(gvr schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, bool) {
	crd, ok := s.defs[gvr]
	return crd, ok
}

// take reads what src serves now. A definition is known by its uid, resourceVersion and
// generation: the generation moves with every change to its spec, and so its schema, even
// where the registry has it without a resourceVersion. What the registry made of its names
// (kind, plural, list kind) is in the key too.
func take(src Source) *snapshot {
	s := &snapshot{defs: map[schema.GroupVersionResource]*apiextensionsv1.CustomResourceDefinition{},
		groupVersions: map[schema.GroupVersion]string{}}
	var all strings.Builder
	for _, r := range src.Served() {
		if !r.Custom {
			s.resources = append(s.resources, r)
			continue
		}
		crd, ok := src.Definition(r.GVR())
		if !ok {
			continue
		}
		s.resources = append(s.resources, r)
		s.defs[r.GVR()] = crd
		k := fmt.Sprintf("%s|%s|%s|%s|%d|%s|%s|%t|%v;", r.GVR(), crd.UID, crd.ResourceVersion, crd.Name, crd.Generation,
			r.GVK.Kind, crd.Status.AcceptedNames.ListKind, r.Namespaced, r.Subresources)
		all.WriteString(k)
		gv := r.GVK.GroupVersion()
		s.groupVersions[gv] += k
	}
	s.key = all.String()
	return s
}

// Documents are the v3 documents to serve now.
func (l *Live) Documents() (*Documents, error) {
	snap := take(l.src)
	l.mu.Lock()
	defer l.mu.Unlock()
	if snap.key == l.v3Key {
		return l.v3, nil
	}
	docs := &Documents{byKey: maps.Clone(l.builtin.v3.byKey)}
	custom := make(map[string]customDocument, len(snap.groupVersions))
	var byGV map[schema.GroupVersion][]*scheme.Resource
	for gv, key := range snap.groupVersions {
		path := groupVersionPath(gv)
		if c, ok := l.custom[path]; ok && c.key == key {
			custom[path] = c
			docs.byKey[path] = c.doc
			continue
		}
		if byGV == nil {
			byGV = byGroupVersion(snap.resources)
		}
		// Built-in resources of the same group version, if any, share its document.
		doc, err := encodeGroupVersion(gv, byGV[gv], l.builtin.version, snap.definition)
		if err != nil {
			return nil, err
		}
		custom[path] = customDocument{key: key, doc: doc}
		docs.byKey[path] = doc
	}
	if err := docs.index(); err != nil {
		return nil, err
	}
	l.v3, l.v3Key, l.custom = docs, snap.key, custom
	return docs, nil
}

// V2 is the v2 document to serve now. It describes every group version, so any change to a
// definition regenerates it, when it is next asked for.
func (l *Live) V2() (*V2, error) {
	snap := take(l.src)
	l.mu.Lock()
	defer l.mu.Unlock()
	if snap.key == l.v2Key {
		return l.v2, nil
	}
	v2 := l.builtin.v2
	if snap.key != "" {
		var err error
		if v2, err = generateV2(snap.resources, l.builtin.version, snap.definition); err != nil {
			return nil, err
		}
	}
	l.v2, l.v2Key = v2, snap.key
	return v2, nil
}

// ServeV3 answers GET Prefix and the documents below it, as Documents.ServeHTTP.
func (l *Live) ServeV3(w http.ResponseWriter, r *http.Request) {
	docs, err := l.Documents()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	docs.ServeHTTP(w, r)
}

// ServeV2 answers GET and HEAD V2Path, as V2.ServeHTTP.
func (l *Live) ServeV2(w http.ResponseWriter, r *http.Request) {
	v2, err := l.V2()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	v2.ServeHTTP(w, r)
}
