package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/kubectl/internal/mapper"
	"minik8s.io/shared/scheme"
)

// resolver finds the resource a user or a manifest names, as kubectl's REST mapper does: the
// kinds built into shared/scheme answer without a request, anything else (custom resources)
// comes from the server's discovery. Discovery is read when first needed and read again once
// on a miss, so a CustomResourceDefinition created a moment ago is found.
type resolver struct {
	// discover reads the server's discovery documents.
	discover func(context.Context) (*mapper.Mapper, error)
	m        *mapper.Mapper
}

// mapper returns discovery as read before, or reads it; fresh says it was read just now.
func (r *resolver) mapper(ctx context.Context, refresh bool) (m *mapper.Mapper, fresh bool, err error) {
	if r.m != nil && !refresh {
		return r.m, false, nil
	}
	m, err = r.discover(ctx)
	if err != nil {
		return nil, false, err
	}
	r.m = m
	return m, true, nil
}

// find asks discovery with ok, and asks a newly read discovery once more when the one read
// before does not answer.
func find[T any](ctx context.Context, r *resolver, ok func(*mapper.Mapper) (T, bool)) (T, bool, error) {
	var zero T
	m, fresh, err := r.mapper(ctx, false)
	if err != nil {
		return zero, false, err
	}
	if v, found := ok(m); found {
		return v, true, nil
	}
	if fresh {
		return zero, false, nil
	}
	if m, _, err = r.mapper(ctx, true); err != nil {
		return zero, false, err
	}
	v, found := ok(m)
	return v, found, nil
}

// resource resolves TYPE[.VERSION][.GROUP] as typed on a command line (pods, po, deploy.apps,
// widgets.example.com, widgets.v1.example.com).
func (r *resolver) resource(ctx context.Context, name string) (*scheme.Resource, error) {
	if res, err := scheme.Lookup(name); err == nil {
		return res, nil
	}
	full, gr := schema.ParseResourceArg(strings.ToLower(name))
	res, found, err := find(ctx, r, func(m *mapper.Mapper) (*scheme.Resource, bool) {
		if full != nil {
			if gvr, err := m.ResourceFor(*full); err == nil {
				return m.Resource(gvr)
			}
		}
		gvr, err := m.ResourceFor(gr.WithVersion(""))
		if err != nil {
			return nil, false
		}
		return m.Resource(gvr)
	})
	if err != nil {
		return nil, err
	}
	if !found {
		// kubectl names the resource as typed, without its group.
		_, typed := schema.ParseResourceArg(name)
		return nil, fmt.Errorf("the server doesn't have a resource type %q", typed.Resource)
	}
	return res, nil
}

// kind resolves a manifest's apiVersion and kind; ok is false when the server serves no such
// kind.
func (r *resolver) kind(ctx context.Context, gvk schema.GroupVersionKind) (*scheme.Resource, bool, error) {
	if res, ok := scheme.ByGVK(gvk); ok {
		return res, true, nil
	}
	return find(ctx, r, func(m *mapper.Mapper) (*scheme.Resource, bool) { return m.KindFor(gvk) })
}

// category lists the resources of a category ("all"): the built-in members, then the served
// resources discovery puts in it (custom resources may name any category).
func (r *resolver) category(ctx context.Context, name string) ([]*scheme.Resource, error) {
	var out []*scheme.Resource
	builtin := map[schema.GroupResource]bool{}
	for _, res := range scheme.Served() {
		builtin[res.GVR().GroupResource()] = true
		if res.Storage == nil && slices.Contains(res.Categories, name) {
			out = append(out, res)
		}
	}
	m, _, err := r.mapper(ctx, false)
	if err != nil {
		return nil, err
	}
	for _, res := range m.Category(name) {
		if !builtin[res.GVR().GroupResource()] {
			out = append(out, res)
		}
	}
	return out, nil
}
