package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/discovery"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/scheme"
)

// OwnerIndex files objects under the uid of each of their owners.
const OwnerIndex = "metadata.ownerReferences.uid"

// OwnerIndexFunc is the indexer of OwnerIndex for metadata caches.
func OwnerIndexFunc(obj runtime.Object) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("owner index: %T has no metadata", obj)
	}
	refs := m.GetOwnerReferences()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = string(r.UID)
	}
	return out, nil
}

// Collected are the resources the collector follows: every served kind but Events, which
// Kubernetes leaves out too (many, short-lived, and never owners).
func Collected() []*scheme.Resource {
	var out []*scheme.Resource
	for _, r := range scheme.Resources {
		if r.Plural != "events" {
			out = append(out, r)
		}
	}
	return out
}

// Config wires a Controller.
type Config struct {
	// Informers are metadata caches by resource plural, each with OwnerIndex.
	Informers map[string]*informer.Informer
	// Metadata is the writer of a resource's objects by their metadata alone: the collector
	// reads and writes every kind, and only its owner references and finalizers.
	Metadata func(res *scheme.Resource) client.Writer[*metav1.PartialObjectMetadata]
	// Discovery finds the owners' kinds that the static scheme does not know: custom
	// resources, served from CustomResourceDefinitions. Without it such owners are
	// unresolvable and their dependents kept.
	Discovery discovery.Discovery
	// List reads every object of a resource by its metadata. With Discovery, the custom
	// resources, which no informer caches, are listed every CustomSweep: their objects with
	// owners, or being deleted with a finalizer of the collector, are handled as cached ones.
	List func(ctx context.Context, res *scheme.Resource) ([]metav1.PartialObjectMetadata, error)
	// CustomSweep defaults to 5 s.
	CustomSweep time.Duration
	// Options' Workers default to 5; Resync is how often every object with owners or a
	// deletion finalizer is looked at again.
	reconcile.Options
}

// Controller is the garbage collector. Build it with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg  Config
	res  map[string]*scheme.Resource
	disc *discovery.Cache
	log  *slog.Logger
}

// New returns a collector over cfg.Informers; it registers its handlers and starts nothing.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	if cfg.Workers <= 0 {
		cfg.Workers = 5
	}
	if cfg.CustomSweep <= 0 {
		cfg.CustomSweep = 5 * time.Second
	}
	c := &Controller{cfg: cfg, res: map[string]*scheme.Resource{}, log: cfg.Logger.With("controller", "garbagecollector")}
	if cfg.Discovery != nil {
		c.disc = discovery.New(cfg.Discovery, cfg.Clock)
	}
	b := reconcile.NewController("garbagecollector", cfg.Options)
	for plural, inf := range cfg.Informers {
		res, err := scheme.Lookup(plural)
		if err != nil {
			panic("garbagecollector: " + err.Error())
		}
		c.res[plural] = res
		b.Watches(inf, func(reconcile.Queue) informer.Handler { return c.handler(res) })
	}
	c.Controller = b.Keys(c.keys).Complete(c)
	return c
}

func key(res *scheme.Resource, namespace, name string) string {
	if namespace == "" {
		return res.Plural + "/" + name
	}
	return res.Plural + "/" + namespace + "/" + name
}

func keyOf(res *scheme.Resource, m metav1.Object) string {
	return key(res, m.GetNamespace(), m.GetName())
}

// interesting: the collector has something to do about objects with owners, and about objects
// being deleted with the orphan or foregroundDeletion finalizer.
func interesting(m metav1.Object) bool {
	return len(m.GetOwnerReferences()) > 0 || (m.GetDeletionTimestamp() != nil && hasGCFinalizer(m))
}

func hasGCFinalizer(m metav1.Object) bool {
	f := m.GetFinalizers()
	return slices.Contains(f, metav1.FinalizerOrphanDependents) || slices.Contains(f, metav1.FinalizerDeleteDependents)
}

func (c *Controller) handler(res *scheme.Resource) informer.Handler {
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if m, ok := obj.(metav1.Object); ok && interesting(m) {
				c.Add(keyOf(res, m))
			}
		},
		UpdateFunc: func(oldObj, newObj runtime.Object) {
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if !ok1 || !ok2 {
				return
			}
			refsChanged := !equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences())
			if !refsChanged && slices.Equal(o.GetFinalizers(), n.GetFinalizers()) && (o.GetDeletionTimestamp() == nil) == (n.GetDeletionTimestamp() == nil) {
				return // a change of spec, status or labels: nothing for the collector
			}
			if interesting(n) {
				c.Add(keyOf(res, n))
			}
			if refsChanged || n.GetDeletionTimestamp() != nil {
				// Owners waiting in the foreground look at their blocking dependents again.
				c.addOwners(res, o)
			}
			if n.GetDeletionTimestamp() != nil && hasGCFinalizer(n) {
				c.addDependents(n.GetUID())
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			m, ok := informer.DeletedObject(obj).(metav1.Object)
			if !ok {
				return
			}
			c.addDependents(m.GetUID())
			c.addOwners(res, m)
		},
	}
}

// OwnerDeleted is told that an object no informer caches (of a custom resource) was
// deleted: its dependents are looked at now rather than at the next resync.
func (c *Controller) OwnerDeleted(resource string, m metav1.Object) {
	c.log.Debug("custom object deleted", "resource", resource, "namespace", m.GetNamespace(), "name", m.GetName())
	c.addDependents(m.GetUID())
}

// addOwners queues the owners of m.
func (c *Controller) addOwners(res *scheme.Resource, m metav1.Object) {
	for _, ref := range m.GetOwnerReferences() {
		owner := c.resourceFor(ref.APIVersion, ref.Kind)
		if owner == nil || c.cfg.Informers[owner.Plural] == nil {
			continue
		}
		ns := ""
		if owner.Namespaced {
			ns = m.GetNamespace()
		}
		c.Add(key(owner, ns, ref.Name))
	}
}

// addDependents queues the objects that name uid as owner.
func (c *Controller) addDependents(uid types.UID) {
	for _, d := range c.dependents(uid) {
		c.Add(keyOf(d.res, d.meta))
	}
}

type object struct {
	res  *scheme.Resource
	meta *metav1.PartialObjectMetadata
}

// dependents are the cached objects that name uid as owner, of every kind.
func (c *Controller) dependents(uid types.UID) []object {
	var out []object
	for plural, inf := range c.cfg.Informers {
		objs, err := inf.Store().ByIndex(OwnerIndex, string(uid))
		if err != nil {
			continue
		}
		for _, o := range objs {
			if m, ok := o.(*metav1.PartialObjectMetadata); ok {
				out = append(out, object{res: c.res[plural], meta: m})
			}
		}
	}
	return out
}

// keys are every cached object the collector may have something to do about.
func (c *Controller) keys() []string {
	var keys []string
	for plural, inf := range c.cfg.Informers {
		for _, o := range inf.Store().List() {
			if m, ok := o.(metav1.Object); ok && interesting(m) {
				keys = append(keys, keyOf(c.res[plural], m))
			}
		}
	}
	return keys
}

// resourceFor finds the served resource of an owner reference's apiVersion and kind in the
// static scheme; another version of a served group and kind counts, as owner references
// outlive API versions.
func (c *Controller) resourceFor(apiVersion, kind string) *scheme.Resource {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	return staticResource(gv, kind)
}

func staticResource(gv schema.GroupVersion, kind string) *scheme.Resource {
	if r, ok := scheme.ByGVK(gv.WithKind(kind)); ok {
		return r
	}
	for _, r := range scheme.Resources {
		if r.GVK.Group == gv.Group && r.GVK.Kind == kind {
			return r
		}
	}
	return nil
}

// ownerResource resolves an owner reference's apiVersion and kind, as Kubernetes' collector
// does through discovery: the static scheme first, then, for a group it does not serve (a
// custom resource's), the API's discovery. nil: the kind is not served (the reference cannot
// be followed); discovery.ErrNotServed: the group version is not served at all, so its objects are gone.
func (c *Controller) ownerResource(ctx context.Context, apiVersion, kind string) (*scheme.Resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, nil
	}
	if r := staticResource(gv, kind); r != nil || discovery.StaticGroup(gv.Group) || c.disc == nil {
		return r, nil
	}
	return c.disc.Resource(ctx, gv, kind)
}

// Start runs the collector, and the sweep of custom resources when it can list them.
func (c *Controller) Start(ctx context.Context) error {
	if c.disc != nil && c.cfg.List != nil {
		go func() {
			t := time.NewTicker(c.cfg.CustomSweep)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					c.sweepCustom(ctx)
				}
			}
		}()
	}
	return c.Controller.Start(ctx)
}

// sweepCustom lists the objects of every custom resource and collects those with owners or
// being deleted with a finalizer of the collector, as collect does cached ones: a custom
// dependent whose owners are gone is deleted, and a custom owner deleted in the foreground or
// orphaning its dependents loses its finalizer once they are handled. A failure is logged;
// the next sweep tries again.
func (c *Controller) sweepCustom(ctx context.Context) {
	resources, err := c.disc.CustomResources(ctx)
	if err != nil {
		c.log.Debug("custom resources not discovered; the sweep waits for the next", "err", err)
		return
	}
	for _, res := range resources {
		items, err := c.cfg.List(ctx, res)
		if err != nil {
			c.log.Debug("custom resource not listed", "resource", res.StoragePlural(), "err", err)
			continue
		}
		for i := range items {
			m := &items[i]
			if !interesting(m) {
				continue
			}
			if err := c.collectObject(ctx, res, m); err != nil {
				c.log.Info("custom object not collected", "resource", res.StoragePlural(), "namespace", m.Namespace, "name", m.Name, "err", err)
			}
		}
	}
}

// Reconcile looks at the object of key ("plural/namespace/name"): one being deleted with a
// finalizer of the collector gets its dependents deleted or orphaned, and one with owners is
// deleted, or loses its references to them, when they are gone.
func (c *Controller) Reconcile(ctx context.Context, k string) (reconcile.Result, error) {
	return reconcile.Result{}, c.collect(ctx, k)
}

func (c *Controller) collect(ctx context.Context, k string) error {
	plural, rest, _ := strings.Cut(k, "/")
	res, inf := c.res[plural], c.cfg.Informers[plural]
	if res == nil || inf == nil {
		return nil
	}
	cached, ok := inf.Store().Get(rest)
	if !ok {
		return nil
	}
	m, ok := cached.(*metav1.PartialObjectMetadata)
	if !ok {
		return fmt.Errorf("%s: cached %T, want metadata", k, cached)
	}
	return c.collectObject(ctx, res, m)
}

// collectObject is collect on an object of res as a cache or a list has it.
func (c *Controller) collectObject(ctx context.Context, res *scheme.Resource, m *metav1.PartialObjectMetadata) error {
	if m.DeletionTimestamp != nil {
		switch {
		case slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents):
			return c.deleteDependents(ctx, res, m)
		case slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, res, m)
		}
		return nil
	}
	if len(m.OwnerReferences) == 0 {
		return nil
	}
	action, err := c.decide(ctx, res, m)
	if err != nil || action.Op == Keep {
		return err
	}
	// The cache may be behind (the object adopted by a new owner a moment ago): decide again
	// on the object as the API has it before changing anything, as Kubernetes does.
	latest, err := c.cfg.Metadata(res).Get(ctx, m.Namespace, m.Name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", keyOf(res, m), err)
	}
	if latest.UID != m.UID {
		return nil
	}
	if action, err = c.decide(ctx, res, latest); err != nil {
		return err
	}
	return c.act(ctx, res, latest, action)
}

func (c *Controller) decide(ctx context.Context, res *scheme.Resource, m *metav1.PartialObjectMetadata) (Action, error) {
	states := make(map[types.UID]OwnerState, len(m.OwnerReferences))
	for _, ref := range m.OwnerReferences {
		s, err := c.ownerState(ctx, res, m, ref)
		if err != nil {
			return Action{}, err
		}
		states[ref.UID] = s
	}
	d := Dependent{OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers, Deleting: m.DeletionTimestamp != nil}
	for _, dep := range c.dependents(m.UID) {
		d.HasDependents = true
		if dep.meta.DeletionTimestamp != nil && slices.Contains(dep.meta.Finalizers, metav1.FinalizerDeleteDependents) {
			d.DependentDeletingDependents = true
		}
	}
	return DecideDependent(d, states), nil
}

// ownerState follows one owner reference: the cache first, and the API when the cache has no
// owner of that uid (it may not have seen the owner yet), so that no dependent is deleted on
// the word of a cache that is behind.
func (c *Controller) ownerState(ctx context.Context, res *scheme.Resource, m metav1.Object, ref metav1.OwnerReference) (OwnerState, error) {
	owner, err := c.ownerResource(ctx, ref.APIVersion, ref.Kind)
	if errors.Is(err, discovery.ErrNotServed) {
		c.log.Debug("owner's group version not served: the owner is gone", "key", keyOf(res, m), "apiVersion", ref.APIVersion, "kind", ref.Kind)
		return OwnerAbsent, nil
	}
	if err != nil {
		// Never delete on doubt: the key goes back to the queue with backoff.
		return 0, fmt.Errorf("resolve owner kind %s %s: %w", ref.APIVersion, ref.Kind, err)
	}
	if owner == nil {
		c.log.Debug("owner of a kind not served", "key", keyOf(res, m), "apiVersion", ref.APIVersion, "kind", ref.Kind)
		return OwnerUnresolvable, nil
	}
	ns := ""
	if owner.Namespaced {
		if !res.Namespaced {
			c.log.Warn("cluster-scoped object names a namespaced owner; left alone", "key", keyOf(res, m), "owner", owner.Plural+"/"+ref.Name)
			return OwnerUnresolvable, nil
		}
		ns = m.GetNamespace()
	}
	if inf := c.cfg.Informers[owner.Plural]; inf != nil && !owner.Custom {
		cacheKey := ref.Name
		if ns != "" {
			cacheKey = ns + "/" + ref.Name
		}
		if o, ok := inf.Store().Get(cacheKey); ok {
			if om, ok := o.(metav1.Object); ok && om.GetUID() == ref.UID {
				return stateOf(om), nil
			}
		}
	}
	got, err := c.cfg.Metadata(owner).Get(ctx, ns, ref.Name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return OwnerAbsent, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get owner %s: %w", key(owner, ns, ref.Name), err)
	}
	if got.UID != ref.UID {
		return OwnerAbsent, nil
	}
	return stateOf(got), nil
}

func (c *Controller) act(ctx context.Context, res *scheme.Resource, m *metav1.PartialObjectMetadata, a Action) error {
	k := keyOf(res, m)
	switch a.Op {
	case RemoveOwners:
		err := c.patchMetadata(ctx, res, m.Namespace, m.Name, map[string]any{
			"ownerReferences": WithoutOwners(m.OwnerReferences, a.Owners...), "resourceVersion": m.ResourceVersion})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("remove owner references of %s: %w", k, err)
		}
		c.log.Debug("removed references to owners gone or deleting", "key", k, "owners", a.Owners)
	case Delete:
		rv := m.ResourceVersion
		if a.Unblock {
			if err := c.patchMetadata(ctx, res, m.Namespace, m.Name, map[string]any{
				"ownerReferences": Unblocked(m.OwnerReferences), "resourceVersion": rv}); err != nil {
				return fmt.Errorf("unblock owner references of %s: %w", k, err)
			}
			rv = ""
		}
		pre := &metav1.Preconditions{UID: &m.UID}
		if rv != "" {
			pre.ResourceVersion = &rv
		}
		err := c.cfg.Metadata(res).Delete(ctx, m.Namespace, m.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &a.Policy})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("delete %s: %w", k, err)
		}
		c.log.Debug("deleted an object whose owners are gone", "key", k, "propagationPolicy", a.Policy)
	}
	return nil
}

// deleteDependents runs a foreground deletion: every dependent is looked at (it sees its
// owner waiting and goes), and the owner's finalizer goes once no dependent blocks it.
func (c *Controller) deleteDependents(ctx context.Context, res *scheme.Resource, owner *metav1.PartialObjectMetadata) error {
	blocking := 0
	for _, d := range c.dependents(owner.UID) {
		if Blocking(owner.UID, d.meta.OwnerReferences) {
			blocking++
		}
		if d.meta.DeletionTimestamp == nil {
			c.Add(keyOf(d.res, d.meta))
		}
	}
	if blocking > 0 {
		// A dependent that goes or drops its reference queues this owner again.
		return nil
	}
	return c.removeFinalizer(ctx, res, owner, metav1.FinalizerDeleteDependents)
}

// orphanDependents removes the references to owner from its dependents, then its finalizer.
func (c *Controller) orphanDependents(ctx context.Context, res *scheme.Resource, owner *metav1.PartialObjectMetadata) error {
	for _, d := range c.dependents(owner.UID) {
		latest, err := c.cfg.Metadata(d.res).Get(ctx, d.meta.Namespace, d.meta.Name, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get dependent %s: %w", keyOf(d.res, d.meta), err)
		}
		refs := WithoutOwners(latest.OwnerReferences, owner.UID)
		if len(refs) == len(latest.OwnerReferences) {
			continue
		}
		err = c.patchMetadata(ctx, d.res, latest.Namespace, latest.Name, map[string]any{"ownerReferences": refs, "resourceVersion": latest.ResourceVersion})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("orphan %s: %w", keyOf(d.res, d.meta), err)
		}
	}
	return c.removeFinalizer(ctx, res, owner, metav1.FinalizerOrphanDependents)
}

// removeFinalizer takes f off the object as the API has it, guarded by its resourceVersion.
func (c *Controller) removeFinalizer(ctx context.Context, res *scheme.Resource, m *metav1.PartialObjectMetadata, f string) error {
	latest, err := c.cfg.Metadata(res).Get(ctx, m.Namespace, m.Name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", keyOf(res, m), err)
	}
	if latest.UID != m.UID || !slices.Contains(latest.Finalizers, f) {
		return nil
	}
	err = c.patchMetadata(ctx, res, m.Namespace, m.Name, map[string]any{
		"finalizers": WithoutFinalizer(latest.Finalizers, f), "resourceVersion": latest.ResourceVersion})
	if err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return fmt.Errorf("remove finalizer %s of %s: %w", f, keyOf(res, m), err)
	}
	c.log.Debug("removed finalizer", "key", keyOf(res, m), "finalizer", f)
	return nil
}

// patchMetadata merges meta into the object's metadata (a JSON merge patch); its
// resourceVersion, when set, is a precondition.
func (c *Controller) patchMetadata(ctx context.Context, res *scheme.Resource, namespace, name string, meta map[string]any) error {
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = c.cfg.Metadata(res).Patch(ctx, namespace, name, types.MergePatchType, data)
	return err
}
