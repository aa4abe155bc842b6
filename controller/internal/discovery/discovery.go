package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// Discovery reads the groups the API serves, and the resources of one group version
// ("demo.minik8s.io/v1"): how controllers find the custom resources, which the static scheme
// does not list. *client.Client is one.
type Discovery interface {
	ServerGroups(ctx context.Context) (*metav1.APIGroupList, error)
	ServerResources(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// ErrNotServed: the API does not serve the owner reference's group version at all (its
// CustomResourceDefinition was deleted, which deletes all its objects first), so the owner
// is gone.
var ErrNotServed = errors.New("group version not served")

// How long a discovery answer is used. Kinds come and go with CustomResourceDefinitions, so
// answers are kept briefly; a kind missing from an answer older than Fresh is asked
// for again before the owner is judged, so a definition made a moment ago is found.
const (
	TTL   = 15 * time.Second
	Fresh = time.Second
)

// discovered is one group version's answer: its resource list, or notServed.
type discovered struct {
	list      *metav1.APIResourceList
	notServed bool
	at        time.Time
}

// Cache resolves the kinds of groups the static scheme does not serve.
type Cache struct {
	disc  Discovery
	clock clock.Clock

	mu      sync.Mutex
	answers map[string]discovered // by group version
}

func New(disc Discovery, clk clock.Clock) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Cache{disc: disc, clock: clk, answers: map[string]discovered{}}
}

// Resource finds the resource of kind in gv: nil when gv is served without that kind, and
// ErrNotServed when gv is not served. Any other error means the answer is unknown.
func (d *Cache) Resource(ctx context.Context, gv schema.GroupVersion, kind string) (*scheme.Resource, error) {
	a, err := d.answer(ctx, gv)
	if err != nil {
		return nil, err
	}
	if r := ResourceOf(a.list, gv, kind); r != nil {
		return r, nil
	}
	if d.clock.Since(a.at) > Fresh {
		if a, err = d.fetch(ctx, gv); err != nil {
			return nil, err
		}
		if r := ResourceOf(a.list, gv, kind); r != nil {
			return r, nil
		}
	}
	if a.notServed {
		// Owner references outlive versions: a definition may stop serving the version a
		// reference names and serve the same objects at another.
		return d.OtherVersion(ctx, gv, kind)
	}
	return nil, nil
}

// OtherVersion finds kind in the versions of gv's group other than gv, the preferred first;
// ErrNotServed when none has it.
func (d *Cache) OtherVersion(ctx context.Context, gv schema.GroupVersion, kind string) (*scheme.Resource, error) {
	groups, err := d.disc.ServerGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		if g.Name != gv.Group {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		for _, v := range versions {
			other := schema.GroupVersion{Group: gv.Group, Version: v}
			if v == "" || other == gv {
				continue
			}
			a, err := d.fetch(ctx, other)
			if err != nil {
				return nil, err
			}
			if r := ResourceOf(a.list, other, kind); r != nil {
				return r, nil
			}
		}
	}
	return nil, ErrNotServed
}

// CustomResources are the resources of every group the static scheme does not serve, at each
// group's preferred version: the custom resources CustomResourceDefinitions serve. Answers
// younger than TTL are reused.
func (d *Cache) CustomResources(ctx context.Context) ([]*scheme.Resource, error) {
	if d.disc == nil {
		return nil, errors.New("custom resources: no discovery client")
	}
	groups, err := d.disc.ServerGroups(ctx)
	if err != nil {
		return nil, err
	}
	var out []*scheme.Resource
	for _, g := range groups.Groups {
		if StaticGroup(g.Name) || g.PreferredVersion.Version == "" {
			continue
		}
		gv := schema.GroupVersion{Group: g.Name, Version: g.PreferredVersion.Version}
		a, err := d.answer(ctx, gv)
		if err != nil {
			return nil, err
		}
		if a.list == nil {
			continue
		}
		for _, r := range a.list.APIResources {
			if !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "list") {
				if res := ResourceOf(a.list, gv, r.Kind); res != nil {
					out = append(out, res)
				}
			}
		}
	}
	return out, nil
}

// StaticGroup reports whether the static scheme serves group: discovery could add no kind to
// it.
func StaticGroup(group string) bool {
	for _, r := range scheme.Resources {
		if r.GVK.Group == group {
			return true
		}
	}
	return false
}

// answer is gv's answer: the cached one while younger than TTL, else asked again.
func (d *Cache) answer(ctx context.Context, gv schema.GroupVersion) (discovered, error) {
	d.mu.Lock()
	a, ok := d.answers[gv.String()]
	d.mu.Unlock()
	if ok && d.clock.Since(a.at) <= TTL {
		return a, nil
	}
	return d.fetch(ctx, gv)
}

func (d *Cache) fetch(ctx context.Context, gv schema.GroupVersion) (discovered, error) {
	if d.disc == nil {
		return discovered{}, fmt.Errorf("discover %s: no discovery client", gv)
	}
	a := discovered{at: d.clock.Now()}
	list, err := d.disc.ServerResources(ctx, gv.String())
	switch {
	case errors.Is(err, apierror.ErrNotFound):
		a.notServed = true
	case err != nil:
		return discovered{}, err
	default:
		a.list = list
	}
	d.mu.Lock()
	d.answers[gv.String()] = a
	d.mu.Unlock()
	return a, nil
}

// ResourceOf builds the resource of kind from a discovery answer, as a custom one: objects of
// a kind the scheme does not know are unstructured. Subresources ("echoapps/status") are not
// resources of their own.
func ResourceOf(list *metav1.APIResourceList, gv schema.GroupVersion, kind string) *scheme.Resource {
	if list == nil {
		return nil
	}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") || r.Kind != kind {
			continue
		}
		res := &scheme.Resource{
			GVK: gv.WithKind(kind), Plural: r.Name, Singular: r.SingularName, Namespaced: r.Namespaced,
			ShortNames: r.ShortNames, Categories: r.Categories, DeleteCollection: slices.Contains(r.Verbs, "deletecollection"),
			Custom: true,
		}
		res.New, res.NewList = scheme.Unstructured(res.GVK, "")
		if res.Singular == "" {
			res.Singular = strings.ToLower(kind)
		}
		for _, s := range list.APIResources {
			if sub, ok := strings.CutPrefix(s.Name, r.Name+"/"); ok {
				res.Subresources = append(res.Subresources, sub)
			}
		}
		return res
	}
	return nil
}
