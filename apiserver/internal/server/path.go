package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/apiserver/internal/registry"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// target is what a resource URL names.
type target struct {
	res         *scheme.Resource
	namespace   string
	name        string
	subresource string
}

// parseResourcePath resolves the segments after /api/v1 or /apis/<group>/<version>.
// It returns ok=false with an empty target for the group-version root itself.
func parseResourcePath(reg *registry.Registry, gv schema.GroupVersion, segs []string) (target, error) {
	notFound := apierror.New(apierror.ErrNotFound, "the server could not find the requested resource")
	var t target
	if len(segs) >= 3 && segs[0] == "namespaces" {
		if r, ok := reg.Resolve(gv.WithResource(segs[2])); ok && r.Namespaced {
			t.res, t.namespace = r, segs[1]
			segs = segs[3:]
			if len(segs) > 0 {
				t.name, segs = segs[0], segs[1:]
			}
			if len(segs) > 0 {
				t.subresource, segs = segs[0], segs[1:]
			}
			if len(segs) > 0 && t.subresource != "proxy" {
				return target{}, notFound
			}
			return t, t.checkSubresource()
		}
	}
	if len(segs) == 0 || (len(segs) > 3 && segs[2] != "proxy") {
		return target{}, notFound
	}
	r, ok := reg.Resolve(gv.WithResource(segs[0]))
	if !ok {
		return target{}, notFound
	}
	t.res = r
	if len(segs) > 1 {
		t.name = segs[1]
	}
	if len(segs) > 2 {
		t.subresource = segs[2]
	}
	if r.Namespaced && t.name != "" {
		// A namespaced resource is only addressable by name inside a namespace.
		return target{}, notFound
	}
	return t, t.checkSubresource()
}

func (t target) checkSubresource() error {
	if t.subresource != "" && !t.res.HasSubresource(t.subresource) {
		return apierror.New(apierror.ErrNotFound, "the server could not find the requested resource (%s %s)", t.res.Plural, t.subresource)
	}
	if t.subresource != "" && t.name == "" {
		return apierror.New(apierror.ErrNotFound, "the server could not find the requested resource")
	}
	return nil
}

// key is the registry's name for the target, under the resource its objects are stored as,
// with the version the request named when it is another.
func (t target) key() registry.Key {
	k := registry.Key{Resource: t.res.Stored(), Namespace: t.namespace, Name: t.name}
	if t.res.Storage != nil {
		k.Served = t.res
	}
	return k
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object %T has no metadata: %w", obj, err)
	}
	return m, nil
}
