package mapper

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// entry is one served resource as discovery lists it.
type entry struct {
	gvr        schema.GroupVersionResource
	singular   string
	shortNames []string
	namespaced bool
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
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			singular := r.SingularName
			if singular == "" {
				singular = strings.ToLower(r.Kind)
			}
			m.entries = append(m.entries, entry{gvr: gv.WithResource(r.Name), singular: singular, shortNames: r.ShortNames, namespaced: r.Namespaced})
		}
	}
	return m
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
