package deployment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/workqueue/clock"
)

// Config wires a Controller.
type Config struct {
	// Deployments, ReplicaSets and Pods are the shared informers.
	Deployments, ReplicaSets, Pods *informer.Informer
	API                            API
	Recorder                       Recorder
	Workers                        int
	// Resync is how often every Deployment is reconciled again whatever the events said.
	Resync time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Controller rolls Deployments out through their ReplicaSets. Build with New, run Start.
type Controller struct {
	cfg  Config
	ds   informer.Lister[*appsv1.Deployment]
	rss  informer.Lister[*appsv1.ReplicaSet]
	pods informer.Lister[*corev1.Pod]
	loop *reconcile.Loop
	// written holds the controller's last writes of Deployments (by key) and ReplicaSets
	// (by "rs:" key) until the cache shows them; rsWrites lists a Deployment's.
	written  reconcile.Written
	mu       sync.Mutex
	rsWrites map[string][]string
	log      *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	c := &Controller{
		cfg:      cfg,
		ds:       informer.NewLister[*appsv1.Deployment](cfg.Deployments.Store()),
		rss:      informer.NewLister[*appsv1.ReplicaSet](cfg.ReplicaSets.Store()),
		pods:     informer.NewLister[*corev1.Pod](cfg.Pods.Store()),
		rsWrites: map[string][]string{},
		log:      cfg.Logger.With("controller", "deployment"),
	}
	c.loop = reconcile.New("deployment", cfg.Clock)
	c.loop.Sync, c.loop.Keys, c.loop.Logger = c.sync, c.keys, cfg.Logger
	c.loop.Synced = []func() bool{cfg.Deployments.HasSynced, cfg.ReplicaSets.HasSynced, cfg.Pods.HasSynced}
	c.loop.Tune(cfg.Workers, cfg.Resync)
	cfg.Deployments.AddEventHandler(informer.HandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(_, obj runtime.Object) {
			if d, ok := obj.(*appsv1.Deployment); ok {
				c.written.Behind(keyOf(d.Namespace, d.Name), d.ResourceVersion, c.cfg.Clock.Now())
			}
			c.enqueue(obj)
		},
		DeleteFunc: func(obj runtime.Object) { c.enqueue(informer.DeletedObject(obj)) },
	})
	cfg.ReplicaSets.AddEventHandler(informer.HandlerFuncs{
		AddFunc:    func(obj runtime.Object) { c.rsChanged(nil, obj) },
		UpdateFunc: c.rsChanged,
		DeleteFunc: func(obj runtime.Object) { c.rsChanged(nil, informer.DeletedObject(obj)) },
	})
	// A pod gone can let a Recreate rollout go on.
	cfg.Pods.AddEventHandler(informer.HandlerFuncs{DeleteFunc: c.podDeleted})
	return c
}

// Start reconciles until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

func keyOf(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) enqueue(obj runtime.Object) {
	if key, err := informer.KeyOf(obj); err == nil {
		c.loop.Add(key)
	}
}

func (c *Controller) keys() []string {
	ds, _ := c.ds.List(nil)
	keys := make([]string, 0, len(ds))
	for _, d := range ds {
		keys = append(keys, keyOf(d.Namespace, d.Name))
	}
	return keys
}

// owner is the key of the Deployment a controller reference names, "" when none in the cache.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil || ref.Kind != Kind.Kind || ref.APIVersion != Kind.GroupVersion().String() {
		return ""
	}
	d, err := c.ds.Get(namespace, ref.Name)
	if err != nil || d.UID != ref.UID {
		return ""
	}
	return keyOf(namespace, d.Name)
}

func (c *Controller) rsChanged(oldObj, obj runtime.Object) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	c.written.Behind("rs:"+keyOf(rs.Namespace, rs.Name), rs.ResourceVersion, c.cfg.Clock.Now())
	keys := []string{c.owner(rs.Namespace, metav1.GetControllerOfNoCopy(rs))}
	if old, ok := oldObj.(*appsv1.ReplicaSet); ok {
		keys = append(keys, c.owner(old.Namespace, metav1.GetControllerOfNoCopy(old)))
	}
	if metav1.GetControllerOfNoCopy(rs) == nil {
		// An orphan: the Deployments that may adopt it.
		ds, _ := c.ds.ListNamespace(rs.Namespace, nil)
		for _, d := range ds {
			if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
				keys = append(keys, keyOf(d.Namespace, d.Name))
			}
		}
	}
	for _, k := range keys {
		if k != "" {
			c.loop.Add(k)
		}
	}
}

func (c *Controller) podDeleted(obj runtime.Object) {
	pod, ok := informer.DeletedObject(obj).(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != replicaset.Kind.Kind {
		return
	}
	if rs, err := c.rss.Get(pod.Namespace, ref.Name); err == nil {
		if key := c.owner(rs.Namespace, metav1.GetControllerOfNoCopy(rs)); key != "" {
			c.loop.Add(key)
		}
	}
}

// behind reports whether the cache has yet to show one of the controller's writes for key.
func (c *Controller) behind(key string, d *appsv1.Deployment, now time.Time) bool {
	if c.written.Behind(key, d.ResourceVersion, now) {
		return true
	}
	c.mu.Lock()
	rsKeys := slices.Clone(c.rsWrites[key])
	c.mu.Unlock()
	var pending []string
	for _, rk := range rsKeys {
		ns, name := informer.SplitKey(rk)
		rv := ""
		if rs, err := c.rss.Get(ns, name); err == nil {
			rv = rs.ResourceVersion
		}
		if c.written.Behind("rs:"+rk, rv, now) {
			pending = append(pending, rk)
		}
	}
	c.mu.Lock()
	c.rsWrites[key] = pending
	c.mu.Unlock()
	return len(pending) > 0
}

func (c *Controller) wroteRS(key string, rs *appsv1.ReplicaSet, now time.Time) {
	rk := keyOf(rs.Namespace, rs.Name)
	c.written.Wrote("rs:"+rk, rs.ResourceVersion, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.rsWrites[key], rk) {
		c.rsWrites[key] = append(c.rsWrites[key], rk)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name := informer.SplitKey(key)
	cached, err := c.ds.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.written.Forget(key)
		c.mu.Lock()
		delete(c.rsWrites, key)
		c.mu.Unlock()
		return nil
	} else if err != nil {
		return err
	}
	now := c.cfg.Clock.Now()
	if c.behind(key, cached, now) {
		// Deciding from objects older than our own writes would undo them or conflict.
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	d := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		// Kubernetes refuses to act on a selector that picks everything.
		c.cfg.Recorder.Eventf(d, corev1.EventTypeWarning, ReasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return c.writeStatus(ctx, key, d, now)
		}
		return nil
	}
	owned, err := c.claim(ctx, d, sel)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		uids := map[string]bool{}
		for _, rs := range owned {
			uids[string(rs.UID)] = true
		}
		all, _ := c.pods.ListNamespace(ns, nil)
		for _, p := range all {
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil && uids[string(ref.UID)] {
				pods = append(pods, p)
			}
		}
	}
	plan := Decide(Input{Deployment: d, ReplicaSets: owned, Pods: pods, Now: now})
	return c.apply(ctx, key, d, plan, now)
}

// claim returns the ReplicaSets d controls, adopting orphans its selector matches and
// releasing its own that stopped matching.
func (c *Controller) claim(ctx context.Context, d *appsv1.Deployment, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rss.ListNamespace(d.Namespace, nil)
	if err != nil {
		return nil, err
	}
	var owned []*appsv1.ReplicaSet
	rechecked := false
	for _, rs := range all {
		ref := metav1.GetControllerOfNoCopy(rs)
		matches := sel.Matches(labels.Set(rs.Labels))
		switch {
		case ref != nil && ref.UID == d.UID && matches:
			if rs.DeletionTimestamp == nil {
				owned = append(owned, rs)
			}
		case ref != nil && ref.UID == d.UID && d.DeletionTimestamp == nil:
			refs := slices.DeleteFunc(slices.Clone(rs.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == d.UID })
			if _, err := c.cfg.API.SetReplicaSetOwners(ctx, rs, refs); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return nil, fmt.Errorf("release replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
		case ref == nil && matches && d.DeletionTimestamp == nil && rs.DeletionTimestamp == nil:
			if !rechecked {
				fresh, err := c.cfg.API.GetDeployment(ctx, d.Namespace, d.Name)
				if err != nil {
					return nil, fmt.Errorf("recheck deployment before adopting: %w", err)
				}
				if fresh.UID != d.UID || fresh.DeletionTimestamp != nil {
					continue
				}
				rechecked = true
			}
			out, err := c.cfg.API.SetReplicaSetOwners(ctx, rs, append(slices.Clone(rs.OwnerReferences), ownerRef(d)))
			if err != nil {
				if errors.Is(err, apierror.ErrNotFound) {
					continue
				}
				return nil, fmt.Errorf("adopt replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			owned = append(owned, out)
		}
	}
	return owned, nil
}

func (c *Controller) apply(ctx context.Context, key string, d *appsv1.Deployment, plan Plan, now time.Time) error {
	if plan.Create != nil {
		out, err := c.cfg.API.CreateReplicaSet(ctx, plan.Create)
		switch {
		case errors.Is(err, apierror.ErrAlreadyExists):
			return c.collision(ctx, key, d, plan.Create, now)
		case err != nil:
			msg := fmt.Sprintf("Failed to create new replica set %q: %v", plan.Create.Name, err)
			c.cfg.Recorder.Eventf(d, corev1.EventTypeWarning, ReasonFailedRSCreate, "%s", msg)
			if hasDeadline(d) {
				setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, now))
				if werr := c.writeStatus(ctx, key, d, now); werr != nil {
					return errors.Join(err, werr)
				}
			}
			return fmt.Errorf("create replicaset %s/%s: %w", d.Namespace, plan.Create.Name, err)
		}
		c.wroteRS(key, out, now)
	}
	for _, rs := range plan.Update {
		out, err := c.cfg.API.UpdateReplicaSet(ctx, rs)
		if err != nil {
			return fmt.Errorf("update replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		c.wroteRS(key, out, now)
	}
	for _, rs := range plan.Delete {
		if err := c.cfg.API.DeleteReplicaSet(ctx, rs.Namespace, rs.Name, rs.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		c.log.Debug("deleted old replicaset", "key", key, "replicaset", rs.Name)
	}
	for _, e := range plan.Events {
		c.cfg.Recorder.Eventf(d, e.Type, e.Reason, "%s", e.Message)
	}
	if plan.Revision != "" {
		out, err := c.cfg.API.SetDeploymentAnnotation(ctx, d, RevisionAnnotation, plan.Revision)
		if err != nil {
			return fmt.Errorf("set revision of deployment %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
		d.ResourceVersion = out.ResourceVersion
	}
	if plan.Status != nil {
		d.Status = *plan.Status
		if err := c.writeStatus(ctx, key, d, now); err != nil {
			return err
		}
	}
	if plan.RequeueAfter > 0 {
		return reconcile.Requeue{After: plan.RequeueAfter}
	}
	return nil
}

// collision handles a new ReplicaSet whose name is taken: by d's own ReplicaSet of the same
// template (the cache had not shown it yet: look again), or by another object, when the
// collision count goes up so that the next hash, and name, differ.
func (c *Controller) collision(ctx context.Context, key string, d *appsv1.Deployment, want *appsv1.ReplicaSet, now time.Time) error {
	existing, err := c.cfg.API.GetReplicaSet(ctx, want.Namespace, want.Name)
	if err != nil {
		return fmt.Errorf("read replicaset %s after a name clash: %w", want.Name, err)
	}
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&existing.Spec.Template, &d.Spec.Template) {
		c.wroteRS(key, existing, now)
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	n := int32(0)
	if d.Status.CollisionCount != nil {
		n = *d.Status.CollisionCount
	}
	n++
	d.Status.CollisionCount = &n
	if err := c.writeStatus(ctx, key, d, now); err != nil {
		return err
	}
	return fmt.Errorf("replicaset name %s is taken by another object: collision count now %d", want.Name, n)
}

func (c *Controller) writeStatus(ctx context.Context, key string, d *appsv1.Deployment, now time.Time) error {
	out, err := c.cfg.API.UpdateDeploymentStatus(ctx, d)
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of deployment %s: %w", key, err)
	}
	c.written.Wrote(key, out.ResourceVersion, now)
	return nil
}
