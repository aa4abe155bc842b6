package deployment

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Config wires a Controller.
type Config struct {
	// DeploymentInformer, ReplicaSetInformer and PodInformer are the shared caches.
	DeploymentInformer, ReplicaSetInformer, PodInformer *informer.Informer
	Deployments                                         client.Writer[*appsv1.Deployment]
	ReplicaSets                                         client.Writer[*appsv1.ReplicaSet]
	Recorder                                            Recorder
	// Options' Resync is how often every Deployment is reconciled again whatever the events
	// said.
	reconcile.Options
}

// Controller rolls Deployments out through their ReplicaSets. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg  Config
	ds   informer.Lister[*appsv1.Deployment]
	rss  informer.Lister[*appsv1.ReplicaSet]
	pods informer.Lister[*corev1.Pod]
	// written holds the controller's last writes of Deployments (by key) and ReplicaSets
	// (by "rs:" key) until the cache shows them; rsWrites lists a Deployment's.
	written  reconcile.Written
	mu       sync.Mutex
	rsWrites map[string][]string
	log      *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:      cfg,
		ds:       informer.NewLister[*appsv1.Deployment](cfg.DeploymentInformer.Store()),
		rss:      informer.NewLister[*appsv1.ReplicaSet](cfg.ReplicaSetInformer.Store()),
		pods:     informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		rsWrites: map[string][]string{},
		log:      cfg.Logger.With("controller", "deployment"),
	}
	c.Controller = reconcile.NewController("deployment", cfg.Options).
		For(cfg.DeploymentInformer).
		Map(cfg.ReplicaSetInformer, c.deploymentsOf).
		// A pod gone can let a Recreate rollout go on.
		Watches(cfg.PodInformer, func(q reconcile.Queue) informer.Handler {
			return informer.HandlerFuncs{DeleteFunc: func(obj runtime.Object) {
				if key := c.podDeployment(informer.DeletedObject(obj)); key != "" {
					q.Add(key)
				}
			}}
		}).
		Complete(c)
	return c
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// owner is the key of the Deployment controlling obj, "" when none in the cache.
func (c *Controller) owner(obj runtime.Object) string {
	return reconcile.CachedOwnerKey(c.ds, obj, Kind)
}

// deploymentsOf are the keys of the Deployment controlling a ReplicaSet, or for an orphan, of
// the Deployments that may adopt it.
func (c *Controller) deploymentsOf(obj runtime.Object) []string {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return nil
	}
	if metav1.GetControllerOfNoCopy(rs) != nil {
		if key := c.owner(rs); key != "" {
			return []string{key}
		}
		return nil
	}
	ds, _ := c.ds.ListNamespace(rs.Namespace, nil)
	var keys []string
	for _, d := range ds {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			keys = append(keys, keyOf(d.Namespace, d.Name))
		}
	}
	return keys
}

// podDeployment is the key of the Deployment whose ReplicaSet controls pod, "" when none.
func (c *Controller) podDeployment(obj runtime.Object) string {
	ref := reconcile.ControllerOf(obj, replicaset.Kind)
	pod, ok := obj.(*corev1.Pod)
	if ref == nil || !ok {
		return ""
	}
	rs, err := c.rss.Get(pod.Namespace, ref.Name)
	if err != nil {
		return ""
	}
	return c.owner(rs)
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

// Reconcile rolls the Deployment of key one step on: claims its ReplicaSets, then creates,
// scales and deletes them as Decide says and writes the revision and the status.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.ds.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.written.Forget(key)
		c.mu.Lock()
		delete(c.rsWrites, key)
		c.mu.Unlock()
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.behind(key, cached, now) {
		// Deciding from objects older than our own writes would undo them or conflict.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	d := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		// Kubernetes refuses to act on a selector that picks everything.
		c.cfg.Recorder.Eventf(d, corev1.EventTypeWarning, ReasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return reconcile.Result{}, c.writeStatus(ctx, key, d, now)
		}
		return reconcile.Result{}, nil
	}
	owned, err := c.claim(ctx, d, sel)
	if err != nil {
		return reconcile.Result{}, err
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
			if _, err := reconcile.Release(ctx, c.cfg.ReplicaSets, rs, d.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return nil, fmt.Errorf("release replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
		case ref == nil && matches && d.DeletionTimestamp == nil && rs.DeletionTimestamp == nil:
			if !rechecked {
				fresh, err := c.cfg.Deployments.Get(ctx, d.Namespace, d.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("recheck deployment before adopting: %w", err)
				}
				if fresh.UID != d.UID || fresh.DeletionTimestamp != nil {
					continue
				}
				rechecked = true
			}
			out, err := reconcile.Adopt(ctx, c.cfg.ReplicaSets, rs, ownerRef(d))
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

func (c *Controller) apply(ctx context.Context, key string, d *appsv1.Deployment, plan Plan, now time.Time) (reconcile.Result, error) {
	if plan.Create != nil {
		out, err := c.cfg.ReplicaSets.Create(ctx, plan.Create, metav1.CreateOptions{})
		switch {
		case errors.Is(err, apierror.ErrAlreadyExists):
			return c.collision(ctx, key, d, plan.Create, now)
		case err != nil:
			msg := fmt.Sprintf("Failed to create new replica set %q: %v", plan.Create.Name, err)
			c.cfg.Recorder.Eventf(d, corev1.EventTypeWarning, ReasonFailedRSCreate, "%s", msg)
			if hasDeadline(d) {
				setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, now))
				if werr := c.writeStatus(ctx, key, d, now); werr != nil {
					return reconcile.Result{}, errors.Join(err, werr)
				}
			}
			return reconcile.Result{}, fmt.Errorf("create replicaset %s/%s: %w", d.Namespace, plan.Create.Name, err)
		}
		c.wroteRS(key, out, now)
	}
	for _, rs := range plan.Update {
		out, err := c.cfg.ReplicaSets.Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("update replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		c.wroteRS(key, out, now)
	}
	for _, rs := range plan.Delete {
		if err := c.cfg.ReplicaSets.Delete(ctx, rs.Namespace, rs.Name, inBackground(rs.UID)); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		c.log.Debug("deleted old replicaset", "key", key, "replicaset", rs.Name)
	}
	for _, e := range plan.Events {
		c.cfg.Recorder.Eventf(d, e.Type, e.Reason, "%s", e.Message)
	}
	if plan.Revision != "" {
		out, err := setAnnotation(ctx, c.cfg.Deployments, d, RevisionAnnotation, plan.Revision)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("set revision of deployment %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
		d.ResourceVersion = out.ResourceVersion
	}
	if plan.Status != nil {
		d.Status = *plan.Status
		if err := c.writeStatus(ctx, key, d, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// collision handles a new ReplicaSet whose name is taken: by d's own ReplicaSet of the same
// template (the cache had not shown it yet: look again), or by another object, when the
// collision count goes up so that the next hash, and name, differ.
func (c *Controller) collision(ctx context.Context, key string, d *appsv1.Deployment, want *appsv1.ReplicaSet, now time.Time) (reconcile.Result, error) {
	existing, err := c.cfg.ReplicaSets.Get(ctx, want.Namespace, want.Name, metav1.GetOptions{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read replicaset %s after a name clash: %w", want.Name, err)
	}
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&existing.Spec.Template, &d.Spec.Template) {
		c.wroteRS(key, existing, now)
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	n := int32(0)
	if d.Status.CollisionCount != nil {
		n = *d.Status.CollisionCount
	}
	n++
	d.Status.CollisionCount = &n
	if err := c.writeStatus(ctx, key, d, now); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, fmt.Errorf("replicaset name %s is taken by another object: collision count now %d", want.Name, n)
}

func (c *Controller) writeStatus(ctx context.Context, key string, d *appsv1.Deployment, now time.Time) error {
	out, err := c.cfg.Deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of deployment %s: %w", key, err)
	}
	c.written.Wrote(key, out.ResourceVersion, now)
	return nil
}

// inBackground deletes the object with uid, its dependents after it.
func inBackground(uid types.UID) metav1.DeleteOptions {
	bg := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg}
}

// setAnnotation sets one annotation of d in a merge patch.
func setAnnotation(ctx context.Context, w client.Writer[*appsv1.Deployment], d *appsv1.Deployment, key, value string) (*appsv1.Deployment, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return nil, err
	}
	return w.Patch(ctx, d.Namespace, d.Name, types.MergePatchType, patch)
}
