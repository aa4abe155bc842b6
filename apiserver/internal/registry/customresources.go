package registry

import (
	"slices"
	"strings"

	"context"
	"encoding/json"
	"errors"
	"k8s.io/apimachinery/pkg/version"
	"sort"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/apiserver/internal/crdschema"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// crdPrefix is where CustomResourceDefinitions are stored.
const crdPrefix = "/registry/customresourcedefinitions/"

// cleanupFinalizer holds a CustomResourceDefinition until its objects are gone, as in
// Kubernetes.
const cleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// customResources are the resources served from CustomResourceDefinitions: one per served
// version of each definition, rebuilt whenever a definition changes.
type customResources struct {
	mu    sync.RWMutex
	byGVR map[schema.GroupVersionResource]*customResource
	// byCRD lists the served versions of each definition by its name.
	byCRD map[string][]schema.GroupVersionResource
	// stored is the storage version's resource of each definition, by its name.
	stored map[string]*scheme.Resource
	// terminatingCRDs are the definitions being deleted: their objects may not be created.
	terminatingCRDs map[string]bool
}

type customResource struct {
	res      *scheme.Resource
	crd      string
	def      *apiextensionsv1.CustomResourceDefinition
	strategy *customStrategy
}

func newCustomResources() *customResources {
	return &customResources{byGVR: map[schema.GroupVersionResource]*customResource{},
		byCRD: map[string][]schema.GroupVersionResource{}, stored: map[string]*scheme.Resource{},
		terminatingCRDs: map[string]bool{}}
}

// set serves crd's versions in place of what was served for it before; nil versions stop
// serving it.
func (c *customResources) set(name string, served []*customResource, stored *scheme.Resource, terminating bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, gvr := range c.byCRD[name] {
		delete(c.byGVR, gvr)
	}
	delete(c.byCRD, name)
	delete(c.stored, name)
	delete(c.terminatingCRDs, name)
	if len(served) == 0 {
		return
	}
	for _, cr := range served {
		gvr := cr.res.GVR()
		c.byGVR[gvr] = cr
		c.byCRD[name] = append(c.byCRD[name], gvr)
	}
	c.stored[name] = stored
	c.terminatingCRDs[name] = terminating
}

func (c *customResources) get(gvr schema.GroupVersionResource) (*customResource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cr, ok := c.byGVR[gvr]
	return cr, ok
}

func (c *customResources) strategy(gvr schema.GroupVersionResource) (Strategy, bool) {
	cr, ok := c.get(gvr)
	if !ok {
		return nil, false
	}
	return cr.strategy, true
}

func (c *customResources) terminating(gvr schema.GroupVersionResource) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cr, ok := c.byGVR[gvr]
	return ok && c.terminatingCRDs[cr.crd]
}

// resources lists the served custom resources by group, version and plural.
func (c *customResources) resources() []*scheme.Resource {
	c.mu.RLock()
	out := make([]*scheme.Resource, 0, len(c.byGVR))
	for _, cr := range c.byGVR {
		out = append(out, cr.res)
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GVK, out[j].GVK
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
		}
		return out[i].Plural < out[j].Plural
	})
	return out
}

// storedResources are the storage versions' resources of every definition.
func (c *customResources) storedResources() []*scheme.Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*scheme.Resource, 0, len(c.stored))
	for _, r := range c.stored {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StoragePlural() < out[j].StoragePlural() })
	return out
}

// Resolve finds a served resource by group, version and plural: a built-in one, or one a
// CustomResourceDefinition serves.
func (r *Registry) Resolve(gvr schema.GroupVersionResource) (*scheme.Resource, bool) {
	if res, ok := scheme.ByGVR(gvr); ok {
		return res, true
	}
	if cr, ok := r.custom.get(gvr); ok {
		return cr.res, true
	}
	return nil, false
}

// Definition is the CustomResourceDefinition that serves gvr, as last seen (shared: not to be
// changed), with the revision it was stored at.
func (r *Registry) Definition(gvr schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, bool) {
	cr, ok := r.custom.get(gvr)
	if !ok {
		return nil, false
	}
	return cr.def, true
}

// Served lists every served resource: the built-in ones, then those of
// CustomResourceDefinitions by group.
func (r *Registry) Served() []*scheme.Resource {
	return append(scheme.Served(), r.custom.resources()...)
}

// StoredResources lists every resource objects are stored under: the built-in kinds and the
// storage version of each CustomResourceDefinition.
func (r *Registry) StoredResources() []*scheme.Resource {
	return append(append([]*scheme.Resource(nil), scheme.Resources...), r.custom.storedResources()...)
}

// Decode decodes a stored object for res, with a custom resource's defaults applied as on
// every read.
func (r *Registry) Decode(res *scheme.Resource, data []byte, rev int64) (runtime.Object, error) {
	obj, err := DecodeStored(res, data, rev)
	if err != nil || !res.Custom {
		return obj, err
	}
	if st, ok := r.custom.strategy(res.GVR()); ok {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			st.(*customStrategy).v.Default(u.Object)
		}
	}
	return obj, nil
}

// PruneUnknown drops from a custom object what its schema does not know, and returns the
// paths of the fields dropped, for strict field validation to report.
func (r *Registry) PruneUnknown(res *scheme.Resource, obj runtime.Object) []string {
	u, st, err := r.customObject(res, obj)
	if err != nil {
		return nil
	}
	return st.v.PruneUnknown(u.Object)
}

// Scale reads the scale subresource's fields of a custom object.
func (r *Registry) Scale(res *scheme.Resource, obj runtime.Object) (spec, status int32, selector string, err error) {
	u, st, err := r.customObject(res, obj)
	if err != nil {
		return 0, 0, "", err
	}
	spec, status, selector, ok, err := st.v.Scale(u)
	if err != nil {
		return 0, 0, "", apierror.New(apierror.ErrInternal, "read the scale of %s %s: %v", res.Plural, u.GetName(), err)
	}
	if !ok {
		return 0, 0, "", apierror.New(apierror.ErrNotFound, "the server could not find the requested resource (%s scale)", res.Plural)
	}
	return spec, status, selector, nil
}

// SetScale sets the replicas of a custom object through its scale subresource's path.
func (r *Registry) SetScale(res *scheme.Resource, obj runtime.Object, replicas int32) error {
	u, st, err := r.customObject(res, obj)
	if err != nil {
		return err
	}
	return st.v.SetScale(u, replicas)
}

func (r *Registry) customObject(res *scheme.Resource, obj runtime.Object) (*unstructured.Unstructured, *customStrategy, error) {
	u, ok := obj.(*unstructured.Unstructured)
	st, served := r.custom.strategy(res.GVR())
	if !ok || !served {
		return nil, nil, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource (%s)", res.Plural)
	}
	return u, st.(*customStrategy), nil
}

// customResourcesOf builds what crd serves: a resource and strategy per served version.
// A version whose schema cannot be built is not served, and logged.
func (r *Registry) customResourcesOf(crd *apiextensionsv1.CustomResourceDefinition) ([]*customResource, *scheme.Resource) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		names = crd.Spec.Names
	}
	storageVersion := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	var out []*customResource
	var stored *scheme.Resource
	for _, v := range crd.Spec.Versions {
		res := customResourceOf(crd.Spec.Group, v, names, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, storageVersion)
		if v.Name == storageVersion {
			stored = res
		}
		if !v.Served {
			continue
		}
		sv, err := crdschema.NewVersion(crd, v.Name)
		if err != nil {
			r.log.Warn("custom resource version not served", "crd", crd.Name, "version", v.Name, "err", err)
			continue
		}
		st := &customStrategy{res: res, v: sv, status: v.Subresources != nil && v.Subresources.Status != nil}
		if v.Name == storageVersion || storageVersion == "" {
			tables.Register(res.GVK.GroupKind(), st.printer())
		}
		out = append(out, &customResource{res: res, crd: crd.Name, def: crd, strategy: st})
	}
	return out, stored
}

// customResourceOf describes one version of a custom resource.
func customResourceOf(group string, v apiextensionsv1.CustomResourceDefinitionVersion, names apiextensionsv1.CustomResourceDefinitionNames, namespaced bool, storageVersion string) *scheme.Resource {
	gvk := schema.GroupVersionKind{Group: group, Version: v.Name, Kind: names.Kind}
	res := &scheme.Resource{GVK: gvk, Plural: names.Plural, Singular: names.Singular, Namespaced: namespaced,
		ShortNames: names.ShortNames, Categories: names.Categories, DeleteCollection: true,
		Custom: true, StorageVersion: storageVersion,
	}
	res.New, res.NewList = scheme.Unstructured(gvk, names.ListKind)
	if res.Singular == "" {
		res.Singular = strings.ToLower(names.Kind)
	}
	if v.Subresources != nil {
		if v.Subresources.Status != nil {
			res.Subresources = append(res.Subresources, "status")
		}
		if v.Subresources.Scale != nil {
			res.Subresources = append(res.Subresources, "scale")
		}
	}
	return res
}

// serveDefinition serves what crd defines now, or stops serving it once it is gone (nil
// with its name).
func (r *Registry) serveDefinition(name string, crd *apiextensionsv1.CustomResourceDefinition) {
	if crd == nil {
		r.custom.set(name, nil, nil, false)
		return
	}
	served, stored := r.customResourcesOf(crd)
	r.custom.set(name, served, stored, crd.DeletionTimestamp != nil)
}

// definitionChanged serves a definition written through this apiserver at once, before the
// watch that every apiserver follows brings it.
func (r *Registry) definitionChanged(obj runtime.Object) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	if crd.DeletionTimestamp != nil && len(crd.Finalizers) == 0 {
		r.serveDefinition(crd.Name, nil)
		return
	}
	r.serveDefinition(crd.Name, crd)
	if crd.DeletionTimestamp != nil {
		r.wakeCleanup()
	}
}

func (r *Registry) wakeCleanup() {
	select {
	case r.cleanupWake <- struct{}{}:
	default:
	}
}

// LoadCustomResources serves the stored definitions; the apiserver calls it before it serves
// requests, so that a restart never answers 404 for a custom resource.
func (r *Registry) LoadCustomResources(ctx context.Context) (int64, error) {
	var rev int64
	from := ""
	for {
		page, err := r.store.List(ctx, crdPrefix, from, 500, rev)
		if err != nil {
			return 0, storeErr(err)
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			crd, err := decodeDefinition(kv.Value)
			if err != nil {
				r.log.Warn("stored custom resource definition unreadable", "key", kv.Key, "err", err)
				continue
			}
			r.serveDefinition(crd.Name, crd)
		}
		if !page.More || len(page.KVs) == 0 {
			return rev, nil
		}
		from = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

func decodeDefinition(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		return nil, err
	}
	return &crd, nil
}

// runCustomResources follows the stored definitions (written through any apiserver) until
// ctx ends, and deletes the objects of definitions being deleted.
func (r *Registry) runCustomResources(ctx context.Context) {
	go r.cleanupLoop(ctx)
	for ctx.Err() == nil {
		rev, err := r.LoadCustomResources(ctx)
		if err == nil {
			r.wakeCleanup()
			err = r.followDefinitions(ctx, rev)
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("following custom resource definitions; starting over", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (r *Registry) followDefinitions(ctx context.Context, rev int64) error {
	for res := range r.store.Watch(ctx, crdPrefix, rev) {
		if res.Err != nil {
			return res.Err
		}
		for _, ev := range res.Events {
			name := ev.KV.Key[len(crdPrefix):]
			if ev.Type == storage.Delete {
				r.serveDefinition(name, nil)
				continue
			}
			crd, err := decodeDefinition(ev.KV.Value)
			if err != nil {
				r.log.Warn("stored custom resource definition unreadable", "key", ev.KV.Key, "err", err)
				continue
			}
			r.serveDefinition(name, crd)
			if crd.DeletionTimestamp != nil {
				r.wakeCleanup()
			}
		}
	}
	return ctx.Err()
}

// cleanupLoop finishes the deletion of definitions: it deletes their objects, and once none
// is left, removes the cleanup finalizer so the definition goes. It runs when woken and
// every few seconds while a definition waits.
func (r *Registry) cleanupLoop(ctx context.Context) {
	for {
		pending, err := r.cleanupDefinitions(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("cleaning up custom resources", "err", err)
		}
		wait := time.Minute
		if pending || err != nil {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-r.cleanupWake:
		case <-time.After(wait):
		}
	}
}

// cleanupDefinitions makes one pass over the definitions being deleted; pending says some
// still wait for their objects to go.
func (r *Registry) cleanupDefinitions(ctx context.Context) (pending bool, err error) {
	crdRes, err := scheme.Lookup("customresourcedefinitions")
	if err != nil {
		return false, err
	}
	list, err := r.List(ctx, Key{Resource: crdRes}, ListOptions{})
	if err != nil {
		return false, err
	}
	for _, item := range list.Items {
		crd := item.(*apiextensionsv1.CustomResourceDefinition)
		if crd.DeletionTimestamp == nil || !slices.Contains(crd.Finalizers, cleanupFinalizer) {
			continue
		}
		left, err := r.deleteCustomObjects(ctx, crd)
		if err != nil {
			return true, err
		}
		if left > 0 {
			pending = true
			continue
		}
		_, err = r.Update(ctx, Key{Resource: crdRes, Name: crd.Name}, UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
			c := cur.(*apiextensionsv1.CustomResourceDefinition)
			c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == cleanupFinalizer })
			return c, "", nil
		})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return true, err
		}
		r.log.Info("custom resource definition deleted with its objects", "crd", crd.Name)
	}
	return pending, nil
}

// deleteCustomObjects deletes every object of crd's resource; it returns how many remain
// (objects with finalizers of their own wait for them).
func (r *Registry) deleteCustomObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	var res *scheme.Resource
	for _, s := range r.custom.storedResources() {
		if s.GVK.Group == crd.Spec.Group && s.Plural == crd.Status.AcceptedNames.Plural {
			res = s
		}
	}
	if res == nil {
		_, stored := r.customResourcesOf(crd)
		if stored == nil {
			return 0, nil
		}
		res = stored
	}
	list, err := r.List(ctx, Key{Resource: res}, ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, item := range list.Items {
		m, err := metaOf(item)
		if err != nil {
			return 0, err
		}
		if m.GetDeletionTimestamp() != nil {
			continue
		}
		_, err = r.Delete(ctx, Key{Resource: res, Namespace: m.GetNamespace(), Name: m.GetName()}, &metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return 0, err
		}
	}
	again, err := r.List(ctx, Key{Resource: res}, ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(again.Items), nil
}
