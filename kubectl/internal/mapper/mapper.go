package mapper

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/scheme"
)

// entry is one served resource as discovery lists it.
type entry struct {
	gvr        schema.GroupVersionResource
	singular   string
	shortNames []string
	namespaced bool
	res        *scheme.Resource
}

func (e entry) named(name string) bool { return name == e.gvr.Resource || name == e.singular }

// Mapper answers from a fixed set of discovery documents.
type Mapper struct {
	entries []entry
}

// New builds a Mapper from discovery's resource lists, in the order a match is preferred:
// the core group's v1 first, then each group in the order /apis lists them, its preferred
// version first. Subresources (names with a "/") are left out.
func New(lists []*metav1.APIResourceList) *Mapper {
	m := &Mapper{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		subresources := map[string][]string{}
		for _, r := range l.APIResources {
			if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
				subresources[parent] = append(subresources[parent], sub)
			}
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			singular := r.SingularName
			if singular == "" {
				singular = strings.ToLower(r.Kind)
			}
			m.entries = append(m.entries, entry{gvr: gv.WithResource(r.Name), singular: singular, shortNames: r.ShortNames, namespaced: r.Namespaced,
				res: describe(gv, r, singular, subresources[r.Name])})
		}
	}
	return m
}

// describe is a served resource as the client needs it, its objects unstructured: discovery
// says all there is to know of a kind kubectl has no Go type for, such as a custom resource.
func describe(gv schema.GroupVersion, r metav1.APIResource, singular string, subresources []string) *scheme.Resource {
	res := &scheme.Resource{
		GVK: gv.WithKind(r.Kind), Plural: r.Name, Singular: singular, Namespaced: r.Namespaced,
		ShortNames: r.ShortNames, Categories: r.Categories, Subresources: subresources,
		DeleteCollection: slices.Contains(r.Verbs, "deletecollection"),
		// What is not in kubectl's scheme is served from a CustomResourceDefinition here; the
		// flag keeps strategic merge patches away from it.
		Custom: true,
	}
	res.New, res.NewList = scheme.Unstructured(res.GVK, "")
	return res
}

// NoMatchError says no served resource answers to what was asked; its message is kubectl's.
type NoMatchError struct {
	Resource, Group string
}

func (e *NoMatchError) Error() string {
	if e.Group == "" {
		return fmt.Sprintf("the server doesn't have a resource type %q", e.Resource)
	}
	return fmt.Sprintf("the server doesn't have a resource type %q in group %q", e.Resource, e.Group)
}

// ResourceFor resolves a possibly partial resource: its name may be a plural, singular or
// short name in any case, its group a prefix of the served group's, and its version empty.
func (m *Mapper) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	r := in
	r.Resource = strings.ToLower(r.Resource)
	r = m.expandShortName(r)
	if e, ok := m.match(r); ok {
		return e.gvr, nil
	}
	return schema.GroupVersionResource{}, &NoMatchError{Resource: in.Resource, Group: in.Group}
}

// Resource describes the resource gvr names exactly, as discovery lists it; ok is false when
// discovery does not list it.
func (m *Mapper) Resource(gvr schema.GroupVersionResource) (*scheme.Resource, bool) {
	for _, e := range m.entries {
		if e.gvr == gvr {
			return e.res, true
		}
	}
	return nil, false
}

// KindFor describes the resource that serves objects of gvk (a manifest's apiVersion and
// kind); ok is false when discovery lists no such kind in that group version.
func (m *Mapper) KindFor(gvk schema.GroupVersionKind) (*scheme.Resource, bool) {
	for _, e := range m.entries {
		if e.res.GVK == gvk {
			return e.res, true
		}
	}
	return nil, false
}

// Category lists the resources in a category ("all"), each once in its preferred version, in
// discovery's order.
func (m *Mapper) Category(name string) []*scheme.Resource {
	var out []*scheme.Resource
	seen := map[schema.GroupResource]bool{}
	for _, e := range m.entries {
		if !slices.Contains(e.res.Categories, name) || seen[e.gvr.GroupResource()] {
			continue
		}
		seen[e.gvr.GroupResource()] = true
		out = append(out, e.res)
	}
	return out
}

// Namespaced reports whether the resource gvr names exactly is namespaced; ok is false when
// discovery does not list it.
func (m *Mapper) Namespaced(gvr schema.GroupVersionResource) (namespaced, ok bool) {
	for _, e := range m.entries {
		if e.gvr == gvr {
			return e.namespaced, true
		}
	}
	return false, false
}

// expandShortName turns a short name into its resource's plural and group, unless the name is
// already a full name in the group asked for. A short name matches in the group asked for
// first, then in groups the asked group is a prefix of ("autoscal" for "autoscaling").
func (m *Mapper) expandShortName(r schema.GroupVersionResource) schema.GroupVersionResource {
	for _, e := range m.entries {
		if (r.Group == "" || r.Group == e.gvr.Group) && e.named(r.Resource) {
			return r
		}
	}
	for _, e := range m.entries {
		if (r.Group == "" || r.Group == e.gvr.Group) && hasShortName(e, r.Resource) {
			return schema.GroupVersionResource{Group: e.gvr.Group, Resource: e.gvr.Resource}
		}
	}
	if r.Group == "" {
		return r
	}
	for _, e := range m.entries {
		if strings.HasPrefix(e.gvr.Group, r.Group) && hasShortName(e, r.Resource) {
			return schema.GroupVersionResource{Group: e.gvr.Group, Version: r.Version, Resource: e.gvr.Resource}
		}
	}
	return r
}

func hasShortName(e entry, name string) bool {
	for _, s := range e.shortNames {
		if s == name {
			return true
		}
	}
	return false
}

// match finds the first entry, in preference order, that r names.
func (m *Mapper) match(r schema.GroupVersionResource) (entry, bool) {
	first := func(ok func(entry) bool) (entry, bool) {
		for _, e := range m.entries {
			if e.named(r.Resource) && ok(e) {
				return e, true
			}
		}
		return entry{}, false
	}
	switch {
	case r.Group != "" && r.Version != "":
		return first(func(e entry) bool { return e.gvr.Group == r.Group && e.gvr.Version == r.Version })
	case r.Group != "":
		// An exact group wins; otherwise "storageclass.storage" finds storage.k8s.io.
		if e, ok := first(func(e entry) bool { return e.gvr.Group == r.Group }); ok {
			return e, true
		}
		return first(func(e entry) bool { return strings.HasPrefix(e.gvr.Group, r.Group) })
	case r.Version != "":
		return first(func(e entry) bool { return e.gvr.Version == r.Version })
	}
	return first(func(entry) bool { return true })
}
