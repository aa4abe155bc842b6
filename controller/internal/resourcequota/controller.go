package resourcequota

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/quota"
	"minik8s.io/shared/reconcile"
)

// Name is the controller's name in --controllers, as in Kubernetes.
const Name = "resourcequota"

// Config wires a Controller.
type Config struct {
	// Quotas caches the ResourceQuotas.
	Quotas *informer.Informer
	// Counted caches the objects quotas count, by resource: pods, Services and claims as
	// their types (their usage reads their spec), others as metadata. The quotas themselves
	// are counted from Quotas.
	Counted map[schema.GroupResource]*informer.Informer
	Writer  client.Writer[*corev1.ResourceQuota]
	// Options' Resync is how often every quota is recounted whatever the events said: a
	// charge admission could not give back is freed then.
	reconcile.Options
}

// Controller keeps ResourceQuotas' status. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg     Config
	quotas  informer.Lister[*corev1.ResourceQuota]
	counted []schema.GroupResource
}

var quotasResource = schema.GroupResource{Resource: "resourcequotas"}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{cfg: cfg, quotas: informer.NewLister[*corev1.ResourceQuota](cfg.Quotas.Store())}
	b := reconcile.NewController(Name, cfg.Options).Watches(cfg.Quotas, specChanged).Keys(c.allQuotas)
	c.counted = append(c.counted, quotasResource)
	for gr, inf := range cfg.Counted {
		if gr == quotasResource {
			continue
		}
		c.counted = append(c.counted, gr)
		b = b.Watches(inf, c.replenish(gr))
	}
	c.counted = sortedResources(c.counted)
	c.Controller = b.Complete(c)
	return c
}

// specChanged queues a quota when it is created or its limits change. The changes of its
// status are admission's charges and this controller's own writes: recounting after each
// charge would read caches that may not hold the object just charged yet, and undo the
// charge.
func specChanged(q reconcile.Queue) informer.Handler {
	add := func(obj runtime.Object) {
		if k, err := informer.KeyOf(obj); err == nil {
			q.Add(k)
		}
	}
	return informer.HandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(old, obj runtime.Object) {
			o, ok1 := old.(*corev1.ResourceQuota)
			n, ok2 := obj.(*corev1.ResourceQuota)
			if !ok1 || !ok2 || !quota.Equals(o.Spec.Hard, n.Spec.Hard) || !equality.Semantic.DeepEqual(o.Spec.ScopeSelector, n.Spec.ScopeSelector) {
				add(obj)
			}
		},
	}
}

// allQuotas are the keys of every cached quota, recounted every Resync.
func (c *Controller) allQuotas() []string {
	quotas, _ := c.quotas.List(labels.Everything())
	keys := make([]string, 0, len(quotas))
	for _, q := range quotas {
		keys = append(keys, q.Namespace+"/"+q.Name)
	}
	return keys
}

// replenish queues, when an object of gr is deleted or an update lowers what it counts for,
// the quotas of its namespace that count gr. Creates need nothing: admission charged them.
func (c *Controller) replenish(gr schema.GroupResource) reconcile.EventHandler {
	return func(q reconcile.Queue) informer.Handler {
		enqueue := func(obj runtime.Object) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return
			}
			quotas, _ := c.quotas.ListNamespace(m.GetNamespace(), labels.Everything())
			for _, rq := range quotas {
				if Counts(rq.Spec.Hard, gr) {
					q.Add(rq.Namespace + "/" + rq.Name)
				}
			}
		}
		return informer.HandlerFuncs{
			UpdateFunc: func(old, obj runtime.Object) {
				if UsageChanged(gr, old, obj, c.cfg.Clock.Now()) {
					enqueue(obj)
				}
			},
			DeleteFunc: func(obj runtime.Object) { enqueue(informer.DeletedObject(obj)) },
		}
	}
}

// Reconcile recounts the quota of key and writes its status when it changed.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	q, err := c.quotas.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	st, recheck, countErr := Status(q, c.counted, c.objects, now)
	if !Equal(st, q.Status) {
		upd := q.DeepCopy()
		upd.Status = st
		if _, err := c.cfg.Writer.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, fmt.Errorf("update resourcequota %s status: %w", key, err)
		}
	}
	if countErr != nil {
		return reconcile.Result{}, countErr
	}
	if !recheck.IsZero() {
		return reconcile.Result{RequeueAfter: recheck.Sub(now)}, nil
	}
	return reconcile.Result{}, nil
}

// objects lists the cached objects of gr in namespace.
func (c *Controller) objects(gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	inf := c.cfg.Counted[gr]
	if gr == quotasResource {
		inf = c.cfg.Quotas
	}
	if inf == nil {
		return nil, fmt.Errorf("no cache of %s", gr)
	}
	return informer.NewLister[runtime.Object](inf.Store()).ListNamespace(namespace, labels.Everything())
}
