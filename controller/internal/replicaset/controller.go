package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// View is how the controller sees the objects of kind T it keeps pods for: ReplicaSets as they
// are, or a kind that is a ReplicaSet under other names. Kubernetes' replication manager is its
// ReplicaSet controller run over v1 ReplicationControllers seen so.
type View[T runtime.Object] struct {
	// Kind names T in the controller references of the pods.
	Kind schema.GroupVersionKind
	// ReplicaSet shows obj as a ReplicaSet, which may share obj's memory: it is only read, or
	// changed where obj is a copy of the controller's own.
	ReplicaSet func(obj T) *appsv1.ReplicaSet
	// WithStatus returns obj, the controller's copy, with st as its status.
	WithStatus func(obj T, st appsv1.ReplicaSetStatus) T
}

// ReplicaSets is the View of ReplicaSets themselves.
var ReplicaSets = View[*appsv1.ReplicaSet]{
	Kind:       Kind,
	ReplicaSet: func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet { return rs },
	WithStatus: func(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) *appsv1.ReplicaSet {
		rs.Status = st
		return rs
	},
}

// Config wires a Controller for objects of kind T.
type Config[T runtime.Object] struct {
	// Name names the controller in logs and metrics: "replicaset".
	Name string
	// View is how T's objects are ReplicaSets.
	View View[T]
	// OwnerInformer (of T) and PodInformer are the shared caches.
	OwnerInformer, PodInformer *informer.Informer
	Owners                     client.Writer[T]
	Pods                       client.Writer[*corev1.Pod]
	Recorder                   Recorder
	// Options' Resync is how often every object is reconciled again whatever the events
	// said.
	reconcile.Options
}

// Controller keeps the pods of every object of kind T: a ReplicaSet, or what its View shows
// as one. Build with New, run Start.
type Controller[T runtime.Object] struct {
	*reconcile.Controller
	cfg          Config[T]
	owners       informer.Lister[T]
	pods         informer.Lister[*corev1.Pod]
	expectations reconcile.Expectations
	children     reconcile.Children[*corev1.Pod]
	written      reconcile.Written
	statusMu     sync.Mutex
	statusAt     map[string]time.Time // the last status write per ReplicaSet
	log          *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New[T runtime.Object](cfg Config[T]) *Controller[T] {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller[T]{
		cfg:    cfg,
		owners: informer.NewLister[T](cfg.OwnerInformer.Store()),
		pods:   informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		log:    cfg.Logger.With("controller", cfg.Name),
	}
	c.children = reconcile.Children[*corev1.Pod]{Writer: cfg.Pods, Expectations: &c.expectations, Recorder: cfg.Recorder, Clock: cfg.Clock}
	pods := &reconcile.ChildPods{Expectations: &c.expectations, Clock: cfg.Clock, Owner: c.owner, Selecting: c.selecting, Counts: counts}
	c.Controller = reconcile.NewController(cfg.Name, cfg.Options).
		For(cfg.OwnerInformer, c.forget).
		Watches(cfg.PodInformer, pods.Events).
		Complete(c)
	pods.Controller = c.Controller
	return c
}

// forget drops what the controller remembers of a deleted ReplicaSet.
func (c *Controller[T]) forget(key string) {
	c.expectations.Forget(key)
	c.written.Forget(key)
	c.statusMu.Lock()
	delete(c.statusAt, key)
	c.statusMu.Unlock()
}

func (c *Controller[T]) lastStatus(key string) time.Time {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.statusAt[key]
}

func (c *Controller[T]) statusWritten(key string, now time.Time) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if c.statusAt == nil {
		c.statusAt = map[string]time.Time{}
	}
	c.statusAt[key] = now
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// owner is the key of the object controlling obj, "" when it names none in the cache
// (another kind, or an object gone or replaced by one of the same name).
func (c *Controller[T]) owner(obj runtime.Object) string {
	return reconcile.CachedOwnerKey(c.owners, obj, c.cfg.View.Kind)
}

// selecting are the keys of the objects whose selector matches pod: who may adopt an orphan.
func (c *Controller[T]) selecting(pod *corev1.Pod) []string {
	owners, _ := c.owners.ListNamespace(pod.Namespace, nil)
	var keys []string
	for _, o := range owners {
		rs := c.cfg.View.ReplicaSet(o)
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			keys = append(keys, keyOf(rs.Namespace, rs.Name))
		}
	}
	return keys
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
func (c *Controller[T]) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.owners.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.expectations.Forget(key)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	obj := cached.DeepCopyObject().(T)
	rs := c.cfg.View.ReplicaSet(obj)
	if c.written.Behind(key, rs.ResourceVersion, now) {
		// Our last status write is not in the cache: one from the older object would conflict.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
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
			manageErr, failedCreate = c.create(ctx, key, obj, rs, d.Create), true
		case len(d.Delete) > 0:
			manageErr = c.delete(ctx, key, obj, d.Delete)
		}
	}

	st, next := Status(rs, owned, manageErr, failedCreate, now)
	due, wait := StatusDue(rs, st, c.lastStatus(key), now)
	if due {
		out, err := c.cfg.Owners.UpdateStatus(ctx, c.cfg.View.WithStatus(obj, st), metav1.UpdateOptions{})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, errors.Join(manageErr, fmt.Errorf("update status of %s %s: %w", strings.ToLower(c.cfg.View.Kind.Kind), key, err))
		}
		if err == nil {
			c.written.Wrote(key, c.cfg.View.ReplicaSet(out).ResourceVersion, now)
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
func (c *Controller[T]) related(rs *appsv1.ReplicaSet, all []*corev1.Pod) []*corev1.Pod {
	uids := map[types.UID]bool{rs.UID: true}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil {
		siblings, _ := c.owners.ListNamespace(rs.Namespace, nil)
		for _, obj := range siblings {
			s := c.cfg.View.ReplicaSet(obj)
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
// and not being deleted (an object deleted and made again under its name must not get the
// old one's pods). It returns the pods adopted.
func (c *Controller[T]) adopt(ctx context.Context, rs *appsv1.ReplicaSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	if len(orphans) == 0 {
		return nil, nil
	}
	got, err := c.cfg.Owners.Get(ctx, rs.Namespace, rs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("recheck %s %s/%s before adopting: %w", strings.ToLower(c.cfg.View.Kind.Kind), rs.Namespace, rs.Name, err)
	}
	if fresh := c.cfg.View.ReplicaSet(got); fresh.UID != rs.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}
	var adopted []*corev1.Pod
	for _, p := range orphans {
		if _, err := reconcile.Adopt(ctx, c.cfg.Pods, p, OwnerRef(rs.ObjectMeta, c.cfg.View.Kind)); err != nil {
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
func (c *Controller[T]) release(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	for _, p := range pods {
		if _, err := reconcile.Release(ctx, c.cfg.Pods, p, rs.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("release pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		c.log.Debug("released pod", "key", keyOf(rs.Namespace, rs.Name), "pod", p.Name)
	}
	return nil
}

// create makes n pods of rs, obj seen as a ReplicaSet (the events are obj's).
func (c *Controller[T]) create(ctx context.Context, key string, obj T, rs *appsv1.ReplicaSet, n int) error {
	made, err := c.children.Create(ctx, obj, key, n, func(int) *corev1.Pod { return PodFromTemplate(rs, c.cfg.View.Kind) })
	if err != nil {
		return fmt.Errorf("create pods of %s %s: %w", strings.ToLower(c.cfg.View.Kind.Kind), key, err)
	}
	c.log.Debug("created pods", "key", key, "count", made)
	return nil
}

// delete removes the chosen pods at once.
func (c *Controller[T]) delete(ctx context.Context, key string, obj T, pods []*corev1.Pod) error {
	return c.children.Delete(ctx, obj, key, pods)
}
