package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Event reasons, Kubernetes' own.
const (
	EventSuccessfulCreate = reconcile.EventSuccessfulCreate
	EventSuccessfulDelete = reconcile.EventSuccessfulDelete
)

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Config wires a Controller.
type Config struct {
	// ReplicaSetInformer and PodInformer are the shared caches.
	ReplicaSetInformer, PodInformer *informer.Informer
	ReplicaSets                     client.Writer[*appsv1.ReplicaSet]
	Pods                            client.Writer[*corev1.Pod]
	Recorder                        Recorder
	// Options' Resync is how often every ReplicaSet is reconciled again whatever the events
	// said.
	reconcile.Options
}

// Controller keeps every ReplicaSet's pods. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg          Config
	rss          informer.Lister[*appsv1.ReplicaSet]
	pods         informer.Lister[*corev1.Pod]
	expectations reconcile.Expectations
	children     reconcile.Children[*corev1.Pod]
	written      reconcile.Written
	statusMu     sync.Mutex
	statusAt     map[string]time.Time // the last status write per ReplicaSet
	log          *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:  cfg,
		rss:  informer.NewLister[*appsv1.ReplicaSet](cfg.ReplicaSetInformer.Store()),
		pods: informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		log:  cfg.Logger.With("controller", "replicaset"),
	}
	c.children = reconcile.Children[*corev1.Pod]{Writer: cfg.Pods, Expectations: &c.expectations, Recorder: cfg.Recorder, Clock: cfg.Clock}
	c.Controller = reconcile.NewController("replicaset", cfg.Options).
		For(cfg.ReplicaSetInformer, c.forget).
		Watches(cfg.PodInformer, c.podEvents).
		Complete(c)
	return c
}

// forget drops what the controller remembers of a deleted ReplicaSet.
func (c *Controller) forget(key string) {
	c.expectations.Forget(key)
	c.written.Forget(key)
	c.statusMu.Lock()
	delete(c.statusAt, key)
	c.statusMu.Unlock()
}

func (c *Controller) lastStatus(key string) time.Time {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.statusAt[key]
}

func (c *Controller) statusWritten(key string, now time.Time) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if c.statusAt == nil {
		c.statusAt = map[string]time.Time{}
	}
	c.statusAt[key] = now
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// owner is the key of the ReplicaSet controlling obj, "" when it names none in the cache
// (another kind, or a ReplicaSet gone or replaced by one of the same name).
func (c *Controller) owner(obj runtime.Object) string {
	return reconcile.CachedOwnerKey(c.rss, obj, Kind)
}

// selecting are the keys of the ReplicaSets whose selector matches pod: who may adopt an orphan.
func (c *Controller) selecting(pod *corev1.Pod) []string {
	rss, _ := c.rss.ListNamespace(pod.Namespace, nil)
	var keys []string
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			keys = append(keys, keyOf(rs.Namespace, rs.Name))
		}
	}
	return keys
}

// podEvents are the handlers of pod changes: they observe the expectations of the ReplicaSets
// controlling the pods, and queue those, or the ones that may adopt an orphan. They run once the
// informers start, after New has built the controller they queue on.
func (c *Controller) podEvents(reconcile.Queue) informer.Handler {
	return informer.HandlerFuncs{AddFunc: c.podAdded, UpdateFunc: c.podUpdated, DeleteFunc: c.podDeleted}
}

func (c *Controller) podAdded(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (after a relist): a deletion.
		c.podDeleted(pod)
		return
	}
	if key := c.owner(pod); key != "" {
		c.expectations.CreationObserved(key)
		c.Wake(key, &c.expectations, c.cfg.Clock.Now())
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil {
		for _, key := range c.selecting(pod) {
			c.Add(key)
		}
	}
}

func (c *Controller) podUpdated(oldObj, newObj runtime.Object) {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == pod.ResourceVersion {
		return
	}
	podKey := keyOf(pod.Namespace, pod.Name)
	newOwner := c.owner(pod)
	if pod.DeletionTimestamp != nil && old.DeletionTimestamp == nil && newOwner != "" {
		// Terminating counts as gone: the replacement starts now.
		c.expectations.DeletionObserved(newOwner, podKey)
	}
	if oldOwner := c.owner(old); oldOwner != "" && oldOwner != newOwner {
		c.Add(oldOwner)
	}
	if newOwner != "" {
		if counts(old, pod) {
			c.Wake(newOwner, &c.expectations, c.cfg.Clock.Now())
		} else {
			// Only readiness, status or the node changed: the status follows after a pause
			// that gathers the changes of many pods into one sync.
			c.AddAfter(newOwner, reconcile.SettleDelay)
		}
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil && (!labels.Equals(old.Labels, pod.Labels) || metav1.GetControllerOfNoCopy(old) != nil) {
		for _, key := range c.selecting(pod) {
			c.Add(key)
		}
	}
}

func (c *Controller) podDeleted(obj runtime.Object) {
	pod, ok := informer.DeletedObject(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if key := c.owner(pod); key != "" {
		c.expectations.DeletionObserved(key, keyOf(pod.Namespace, pod.Name))
		c.Wake(key, &c.expectations, c.cfg.Clock.Now())
	}
}

// counts reports whether a pod's change bears on how many pods its ReplicaSet has: its labels,
// its controller, its deletion or its end.
func counts(old, pod *corev1.Pod) bool {
	controlled := func(p *corev1.Pod) bool { return metav1.GetControllerOfNoCopy(p) != nil }
	return !labels.Equals(old.Labels, pod.Labels) || controlled(old) != controlled(pod) ||
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) || Active(old) != Active(pod)
}

// Reconcile brings the ReplicaSet of key to its spec: adopts and releases pods, creates or
// deletes the difference once its expectations are met, and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.rss.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.expectations.Forget(key)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.written.Behind(key, cached.ResourceVersion, now) {
		// Our last status write is not in the cache: one from the older object would conflict.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	rs := cached.DeepCopy()
	satisfied := c.expectations.Satisfied(key, now)
	all, err := c.pods.ListNamespace(ns, nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	owned, adopt, release, err := Claim(rs, all)
	if err != nil {
		return reconcile.Result{}, err // the apiserver validates selectors: not reached with what it stores
	}
	adopted, err := c.adopt(ctx, rs, adopt)
	owned = append(owned, adopted...)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.release(ctx, rs, release); err != nil {
		return reconcile.Result{}, err
	}

	var manageErr error
	failedCreate := false
	if satisfied && rs.DeletionTimestamp == nil {
		d := Decide(rs, owned, c.related(rs, all))
		switch {
		case d.Create > 0:
			manageErr, failedCreate = c.create(ctx, key, rs, d.Create), true
		case len(d.Delete) > 0:
			manageErr = c.delete(ctx, key, rs, d.Delete)
		}
	}

	st, next := Status(rs, owned, manageErr, failedCreate, now)
	due, wait := StatusDue(rs, st, c.lastStatus(key), now)
	if due {
		rs.Status = st
		out, err := c.cfg.ReplicaSets.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, errors.Join(manageErr, fmt.Errorf("update status of replicaset %s: %w", key, err))
		}
		if err == nil {
			c.written.Wrote(key, out.ResourceVersion, now)
			c.statusWritten(key, now)
		}
	}
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	if wait > 0 && (next == 0 || wait < next) {
		next = wait
	}
	// A ready pod becomes available after next, or a held-back status is due: its counts must
	// follow.
	return reconcile.Result{RequeueAfter: next}, nil
}

// related are the active pods controlled by rs or by its siblings (ReplicaSets with the same
// controller, the other revisions of a Deployment): spreading across nodes counts them all.
func (c *Controller) related(rs *appsv1.ReplicaSet, all []*corev1.Pod) []*corev1.Pod {
	uids := map[types.UID]bool{rs.UID: true}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil {
		siblings, _ := c.rss.ListNamespace(rs.Namespace, nil)
		for _, s := range siblings {
			if o := metav1.GetControllerOfNoCopy(s); o != nil && o.UID == owner.UID {
				uids[s.UID] = true
			}
		}
	}
	var out []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && uids[ref.UID] && Active(p) {
			out = append(out, p)
		}
	}
	return out
}

// adopt takes the orphans, after checking with the apiserver that rs is what the cache says
// and not being deleted (a ReplicaSet deleted and made again under its name must not get the
// old one's pods). It returns the pods adopted.
func (c *Controller) adopt(ctx context.Context, rs *appsv1.ReplicaSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	if len(orphans) == 0 {
		return nil, nil
	}
	fresh, err := c.cfg.ReplicaSets.Get(ctx, rs.Namespace, rs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("recheck replicaset %s/%s before adopting: %w", rs.Namespace, rs.Name, err)
	}
	if fresh.UID != rs.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}
	var adopted []*corev1.Pod
	for _, p := range orphans {
		if _, err := reconcile.Adopt(ctx, c.cfg.Pods, p, OwnerRef(rs.ObjectMeta, Kind)); err != nil {
			if errors.Is(err, apierror.ErrNotFound) {
				continue
			}
			return adopted, fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		c.log.Debug("adopted pod", "key", keyOf(rs.Namespace, rs.Name), "pod", p.Name)
		adopted = append(adopted, p)
	}
	return adopted, nil
}

// release drops rs's reference from pods that no longer match its selector.
func (c *Controller) release(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	for _, p := range pods {
		if _, err := reconcile.Release(ctx, c.cfg.Pods, p, rs.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("release pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		c.log.Debug("released pod", "key", keyOf(rs.Namespace, rs.Name), "pod", p.Name)
	}
	return nil
}

// create makes n pods.
func (c *Controller) create(ctx context.Context, key string, rs *appsv1.ReplicaSet, n int) error {
	made, err := c.children.Create(ctx, rs, key, n, func(int) *corev1.Pod { return PodFromTemplate(rs) })
	if err != nil {
		return fmt.Errorf("create pods of replicaset %s: %w", key, err)
	}
	c.log.Debug("created pods", "key", key, "count", made)
	return nil
}

// delete removes the chosen pods at once.
func (c *Controller) delete(ctx context.Context, key string, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	return c.children.Delete(ctx, rs, key, pods)
}
