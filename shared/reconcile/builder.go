package reconcile

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/workqueue/clock"
)

// Reconciler brings one key ("namespace/name", or "name" for cluster-scoped objects) to what
// the caches say it should be. It re-reads the object from its cache; a missing object means
// done. A nil error forgets the key's failures; an error requeues it with per-key backoff.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function to a Reconciler.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile implements Reconciler.
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Result says when to look at a key again without counting a failure: a controller waiting
// for its own writes to reach the cache, or for a deadline (a Job's activeDeadlineSeconds).
type Result struct {
	RequeueAfter time.Duration
}

// Options tune a controller; zero fields keep the loop's defaults (2 workers, a 1 min resync).
type Options struct {
	// Workers is how many keys are reconciled at once; a key is never on two workers.
	Workers int
	// Resync is how often every key of the primary cache is queued again, whatever the events.
	Resync time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics is the registry the queue and the loop report to; nil takes SetMetrics'.
	Metrics *metrics.Registry
}

// Queue is where event handlers put keys.
type Queue interface {
	Add(key string)
}

// EventHandler turns one informer's events into keys on q. For, Owns and Map cover the usual
// cases; a controller with bookkeeping of its own (expectations) writes one.
type EventHandler func(q Queue) informer.Handler

// Builder declares a controller: the informer of the kind it reconciles, the informers whose
// changes lead to a key of it, and the Reconciler. See NewController.
type Builder struct {
	name     string
	opts     Options
	primary  *informer.Informer
	keys     func() []string
	resynced func(ctx context.Context)
	watches  []watched
	synced   []func() bool
}

type watched struct {
	inf *informer.Informer
	h   EventHandler
}

// NewController starts declaring the controller name (its log and metrics label).
func NewController(name string, opts Options) *Builder {
	return &Builder{name: name, opts: opts}
}

// For names the informer of the reconciled kind: its objects' keys are queued on every
// change, listed every Resync, and its cache is synced before the first reconcile. onDelete,
// when given, runs with the key of each deleted object (to forget bookkeeping).
func (b *Builder) For(inf *informer.Informer, onDelete ...func(key string)) *Builder {
	b.primary = inf
	return b.Watches(inf, EnqueueOwn(onDelete...))
}

// Owns queues, for each change of an object in inf, the key of its controller owner of kind
// owner (the ownerReference with controller: true), as controller-runtime's
// EnqueueRequestForOwner. On an update that changes the owner both are queued.
func (b *Builder) Owns(inf *informer.Informer, owner schema.GroupVersionKind) *Builder {
	return b.Watches(inf, EnqueueOwner(owner))
}

// Map queues the keys keysOf returns for each changed object of inf (a Service for each pod
// it selects, say); on an update, those of the old and the new object.
func (b *Builder) Map(inf *informer.Informer, keysOf func(obj runtime.Object) []string) *Builder {
	return b.Watches(inf, EnqueueMapped(keysOf))
}

// Watches registers h on inf, and waits for inf's cache before the first reconcile.
func (b *Builder) Watches(inf *informer.Informer, h EventHandler) *Builder {
	b.watches = append(b.watches, watched{inf: inf, h: h})
	return b
}

// Reads waits for the caches of informers the Reconciler reads without reacting to their
// changes.
func (b *Builder) Reads(infs ...*informer.Informer) *Builder {
	for _, inf := range infs {
		b.synced = append(b.synced, inf.HasSynced)
	}
	return b
}

// Keys replaces the keys queued every Resync (by default, every object of the For informer).
func (b *Builder) Keys(keys func() []string) *Builder {
	b.keys = keys
	return b
}

// Resynced runs after each resync's keys are queued, for keys no cache lists (a deleted object
// that left something behind).
func (b *Builder) Resynced(f func(ctx context.Context)) *Builder {
	b.resynced = f
	return b
}

// Complete builds the controller around r and registers its handlers. It starts nothing.
func (b *Builder) Complete(r Reconciler) *Controller {
	reg := b.opts.Metrics
	if reg == nil {
		reg = registry.Load()
	}
	l := NewIn(reg, b.name, b.opts.Clock)
	l.Tune(b.opts.Workers, b.opts.Resync)
	l.Logger = b.opts.Logger
	l.Resynced = b.resynced
	l.Sync = func(ctx context.Context, key string) error {
		res, err := r.Reconcile(ctx, key)
		if err == nil && res.RequeueAfter > 0 {
			return Requeue{After: res.RequeueAfter}
		}
		return err
	}
	l.Keys = b.keys
	if l.Keys == nil {
		l.Keys = func() []string { return nil }
		if b.primary != nil {
			l.Keys = storeKeys(b.primary)
		}
	}
	l.Synced = append(l.Synced, b.synced...)
	for _, w := range b.watches {
		l.Synced = append(l.Synced, w.inf.HasSynced)
		w.inf.AddEventHandler(w.h(l))
	}
	return &Controller{loop: l}
}

// storeKeys lists the keys of every object in inf's cache.
func storeKeys(inf *informer.Informer) func() []string {
	return func() []string {
		objs := inf.Store().List()
		keys := make([]string, 0, len(objs))
		for _, o := range objs {
			if k, err := informer.KeyOf(o); err == nil {
				keys = append(keys, k)
			}
		}
		return keys
	}
}

// Controller is a built controller: Start runs it.
type Controller struct {
	loop *Loop
}

// Start waits for the caches, then reconciles until ctx ends; it drains its workers first.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

// Add queues key, for a controller that learns of work outside its informers.
func (c *Controller) Add(key string) { c.loop.Add(key) }

// AddAfter queues key after d.
func (c *Controller) AddAfter(key string, d time.Duration) { c.loop.Queue.AddAfter(key, d) }

// SettleDelay is how long a controller waits after a child's change that does not let it act
// (a pod's readiness, a creation while others are still expected) before it syncs: a thousand
// children starting then cost a few syncs, not thousands.
const SettleDelay = 100 * time.Millisecond

// Wake queues key after one of its children changed: now when its expectations are met (the
// sync can act), else after SettleDelay (the sync would only update status).
func (c *Controller) Wake(key string, e *Expectations, now time.Time) {
	if e.Satisfied(key, now) {
		c.Add(key)
		return
	}
	c.AddAfter(key, SettleDelay)
}

// Name is the controller's name.
func (c *Controller) Name() string { return c.loop.Name }

// EnqueueOwn queues each changed object's own key; onDelete runs with a deleted one's key.
func EnqueueOwn(onDelete ...func(key string)) EventHandler {
	return func(q Queue) informer.Handler {
		add := func(obj runtime.Object) {
			if k, err := informer.KeyOf(obj); err == nil {
				q.Add(k)
			}
		}
		return informer.HandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(_, obj runtime.Object) { add(obj) },
			DeleteFunc: func(obj runtime.Object) {
				k, err := informer.KeyOf(informer.DeletedObject(obj))
				if err != nil {
					return
				}
				for _, f := range onDelete {
					f(k)
				}
				q.Add(k)
			},
		}
	}
}

// EnqueueOwner queues each changed object's controller owner of kind owner.
func EnqueueOwner(owner schema.GroupVersionKind) EventHandler {
	return EnqueueMapped(func(obj runtime.Object) []string {
		if k := OwnerKey(obj, owner); k != "" {
			return []string{k}
		}
		return nil
	})
}

// EnqueueMapped queues keysOf(obj) for each changed object; on an update, for the old and the
// new object both (what the old one mapped to may need to let go of it).
func EnqueueMapped(keysOf func(obj runtime.Object) []string) EventHandler {
	return func(q Queue) informer.Handler {
		add := func(obj runtime.Object) {
			for _, k := range keysOf(obj) {
				q.Add(k)
			}
		}
		return informer.HandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(old, obj runtime.Object) { add(old); add(obj) },
			DeleteFunc: func(obj runtime.Object) { add(informer.DeletedObject(obj)) },
		}
	}
}

// ControllerOf returns obj's controller ownerReference when it is of kind owner, nil
// otherwise.
func ControllerOf(obj runtime.Object, owner schema.GroupVersionKind) *metav1.OwnerReference {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != owner.Kind || ref.APIVersion != owner.GroupVersion().String() {
		return nil
	}
	return ref
}

// OwnerKey is the key of obj's controller owner of kind owner (in obj's namespace), "" when it
// has none.
func OwnerKey(obj runtime.Object, owner schema.GroupVersionKind) string {
	ref := ControllerOf(obj, owner)
	if ref == nil {
		return ""
	}
	m, _ := meta.Accessor(obj)
	if m.GetNamespace() == "" {
		return ref.Name
	}
	return m.GetNamespace() + "/" + ref.Name
}
