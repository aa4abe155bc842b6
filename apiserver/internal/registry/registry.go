package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Config is what a Registry needs.
type Config struct {
	Store  storage.Interface
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// PodCIDRs is the pod network, split into one /PodCIDRBits block per node; the default
	// network when not valid.
	PodCIDRs    netip.Prefix
	PodCIDRBits int
	// Admit, when set, sees every create, update and delete once the object is what would be
	// stored (defaulted, before validation) and may refuse it: the apiserver's admission
	// chain (NodeRestriction, RBAC's escalation checks), which reads the requester from ctx.
	Admit AdmitFunc
	// AdmitValidated, when set, sees every create, update (of any subresource) and delete
	// once the object passed validation, just before it is stored, and may refuse it: the
	// validating admission webhooks. It is called once per write, not again when a write
	// retries after losing a race.
	AdmitValidated AdmitFunc
	// Changed, when set, is told the key of every object this registry wrote or deleted, once
	// the write is stored: caches of what admission reads forget it at once.
	Changed func(k Key)
}

// Operation is what a write does, as admission names it.
type Operation string

const (
	OpCreate Operation = "CREATE"
	OpUpdate Operation = "UPDATE"
	OpDelete Operation = "DELETE"
)

// AdmitFunc judges one write of k (its Name filled in): obj is the new object (nil for a
// delete), old the stored one (nil for a create).
type AdmitFunc func(ctx context.Context, op Operation, k Key, subresource string, obj, old runtime.Object) error

type dryRunKey struct{}

// DryRun reports whether the write an AdmitFunc judges is a dry run, which stores nothing.
func DryRun(ctx context.Context) bool {
	dry, _ := ctx.Value(dryRunKey{}).(bool)
	return dry
}

// admitting is ctx as admission sees a write: with whether it is a dry run.
func admitting(ctx context.Context, dry bool) context.Context {
	return context.WithValue(ctx, dryRunKey{}, dry)
}

// callAdmitValidated runs Config.AdmitValidated, when set.
func (r *Registry) callAdmitValidated(ctx context.Context, dry bool, op Operation, k Key, sub string, obj, old runtime.Object) error {
	if r.admitValidated == nil {
		return nil
	}
	return r.admitValidated(admitting(ctx, dry), op, k, sub, obj, old)
}

// Registry stores and reads the objects of every served resource. Build it with New; Start
// runs its background work.
type Registry struct {
	store      storage.Interface
	log        *slog.Logger
	now        func() time.Time
	alloc      *allocator.Allocator
	strategies map[*scheme.Resource]Strategy
	ns         *namespaces
	admit      AdmitFunc
	// admitValidated is Config.AdmitValidated.
	admitValidated AdmitFunc
	changed        func(k Key)
	quotaLocks     quotaLocks
	// emptyPolicies are the namespaces recently listed without quotas or limit ranges.
	emptyPolicies emptyPolicies
	// custom are the resources served from CustomResourceDefinitions.
	custom *customResources
	// cleanupWake asks for a pass over the definitions being deleted.
	cleanupWake chan struct{}
}

// New builds a registry; it starts nothing.
func New(cfg Config) *Registry {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Registry{store: cfg.Store, log: cfg.Logger, now: cfg.Now,
		alloc: allocator.New(cfg.Store, cfg.PodCIDRs, cfg.PodCIDRBits)}
	r.strategies = strategies(r.alloc)
	r.admit, r.admitValidated, r.changed = cfg.Admit, cfg.AdmitValidated, cfg.Changed
	r.ns = newNamespaces(r)
	r.custom = newCustomResources()
	r.cleanupWake = make(chan struct{}, 1)
	return r
}

// Key names one object, or with an empty Name a collection (in Namespace, or everywhere).
type Key struct {
	Resource  *scheme.Resource
	Namespace string
	Name      string
	// Served is the resource a request named when it is another version of Resource (one of
	// scheme.OtherVersions), whose writes may answer to further rules; nil otherwise.
	Served *scheme.Resource
}

// String is the key as a path: plural/namespace/name.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Resource.Plural + "/" + k.Name
	}
	return k.Resource.Plural + "/" + k.Namespace + "/" + k.Name
}

func (r *Registry) strategy(res *scheme.Resource) Strategy {
	if st, ok := r.strategies[res]; ok {
		return st
	}
	if res.Custom {
		if st, ok := r.custom.strategy(res.GVR()); ok {
			return st
		}
	}
	return newUnregistered(res)
}

// storageKey is /registry/<plural>/<namespace>/<name>, or without namespace for cluster scope.
func storageKey(k Key) string {
	var b strings.Builder
	b.WriteString("/registry/")
	b.WriteString(k.Resource.StoragePlural())
	b.WriteByte('/')
	if k.Resource.Namespaced && k.Namespace != "" {
		b.WriteString(k.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(k.Name)
	return b.String()
}

// storagePrefix is the key prefix of a collection: one namespace, or all of them.
func storagePrefix(res *scheme.Resource, namespace string) string {
	if res.Namespaced && namespace != "" {
		return "/registry/" + res.StoragePlural() + "/" + namespace + "/"
	}
	return "/registry/" + res.StoragePlural() + "/"
}

func notFound(k Key) error {
	return apierror.NotFound(k.Resource.GVK.Group, k.Resource.Plural, k.Name)
}

// storeErr turns a storage failure into an API error; unknown failures stay 5xx.
func storeErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return apierror.New(apierror.ErrTimeout, "storage did not answer in time: %v", err)
	case errors.Is(err, storage.ErrCompacted):
		return apierror.New(apierror.ErrGone, "the requested resource version is too old and has been compacted: %v", err)
	default:
		return apierror.New(apierror.ErrUnavailable, "storage error: %v", err)
	}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object %T has no metadata: %w", obj, err)
	}
	return m, nil
}

// Get returns the stored form of an object: its JSON without resourceVersion, and the
// revision that is its resourceVersion.
func (r *Registry) Get(ctx context.Context, k Key) (storage.KV, error) {
	kv, err := r.store.Get(ctx, storageKey(k))
	if errors.Is(err, storage.ErrKeyNotFound) {
		return kv, notFound(k)
	}
	if err != nil {
		return kv, storeErr(err)
	}
	return kv, nil
}

// Read returns the current object and its stored form.
func (r *Registry) Read(ctx context.Context, k Key) (runtime.Object, storage.KV, error) {
	kv, err := r.Get(ctx, k)
	if err != nil {
		return nil, kv, err
	}
	obj, err := r.Decode(k.Resource, kv.Value, kv.ModRevision)
	return obj, kv, err
}

// EncodeStored encodes an object for storage: JSON with type meta, without resourceVersion.
func EncodeStored(obj runtime.Object, res *scheme.Resource) ([]byte, error) {
	gvk := res.GVK
	if res.StorageVersion != "" {
		gvk.Version = res.StorageVersion
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	data, err := scheme.MarshalJSON(obj)
	m.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
	return data, err
}

// DecodeStored decodes a stored value and stamps the revision it was read at.
func DecodeStored(res *scheme.Resource, data []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	var err error
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object, err = scheme.UnmarshalContent(data)
	} else {
		err = json.Unmarshal(data, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Plural, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(formatRV(rev))
	return obj, nil
}

// Revision is the store's current revision.
func (r *Registry) Revision(ctx context.Context) (int64, error) {
	rev, err := r.store.Revision(ctx)
	if err != nil {
		return 0, storeErr(err)
	}
	return rev, nil
}

// Start creates the system namespaces and runs the background work (namespace finalization,
// default service accounts, allocation repair) until ctx ends.
func (r *Registry) Start(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.repairLoop(ctx)
	}()
	crdsDone := make(chan struct{})
	go func() {
		defer close(crdsDone)
		r.runCustomResources(ctx)
	}()
	err := r.ns.run(ctx)
	<-done
	<-crdsDone
	return err
}

// repairLoop makes the address allocations match the stored Services and Nodes every
// allocator.RepairAge, freeing only reservations older than the previous round.
func (r *Registry) repairLoop(ctx context.Context) {
	var before int64
	for {
		rev, err := r.repair(ctx, before)
		if err != nil {
			r.log.Warn("repairing address allocations", "err", err)
		} else {
			before = rev
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(allocator.RepairAge):
		}
	}
}

// repair runs one allocation repair; it returns the revision it read the holders at, the
// next round's before.
func (r *Registry) repair(ctx context.Context, before int64) (int64, error) {
	var holders []runtime.Object
	var rev int64
	for _, plural := range []string{"services", "nodes"} {
		res, err := scheme.Lookup(plural)
		if err != nil {
			return 0, err
		}
		list, err := r.List(ctx, Key{Resource: res}, ListOptions{})
		if err != nil {
			return 0, err
		}
		if rev == 0 || list.Revision < rev {
			rev = list.Revision
		}
		holders = append(holders, list.Items...)
	}
	return rev, r.alloc.Repair(ctx, holders, before)
}
