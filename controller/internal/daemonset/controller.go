package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/backoff"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Config wires a Controller.
type Config struct {
	// The shared caches.
	DaemonSetInformer, PodInformer, NodeInformer, RevisionInformer *informer.Informer
	DaemonSets                                                     client.Writer[*appsv1.DaemonSet]
	Pods                                                           client.Writer[*corev1.Pod]
	Revisions                                                      client.Writer[*appsv1.ControllerRevision]
	Recorder                                                       record.EventRecorder
	reconcile.Options
}

// Controller keeps every DaemonSet's pods, one on each node that suits it. Build with New,
// run Start.
type Controller struct {
	*reconcile.Controller
	cfg          Config
	dss          informer.Lister[*appsv1.DaemonSet]
	pods         informer.Lister[*corev1.Pod]
	nodes        informer.Lister[*corev1.Node]
	revisions    informer.Lister[*appsv1.ControllerRevision]
	expectations reconcile.Expectations
	children     reconcile.Children[*corev1.Pod]
	written      reconcile.Written
	failed       *backoff.BackOff // per DaemonSet and node, before a failed pod is replaced
	log          *slog.Logger
}

// The back-off before a node's failed daemon pod is replaced again, as upstream's.
const (
	failedBackoffInitial = time.Second
	failedBackoffMax     = 15 * time.Minute
)

// EventFailedDaemonPod is upstream's reason for a failed pod the controller replaces.
const EventFailedDaemonPod = "FailedDaemonPod"

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:       cfg,
		dss:       informer.NewLister[*appsv1.DaemonSet](cfg.DaemonSetInformer.Store()),
		pods:      informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		nodes:     informer.NewLister[*corev1.Node](cfg.NodeInformer.Store()),
		revisions: informer.NewLister[*appsv1.ControllerRevision](cfg.RevisionInformer.Store()),
		failed:    backoff.NewWith(cfg.Clock, failedBackoffInitial, failedBackoffMax, failedBackoffMax),
		log:       cfg.Logger.With("controller", "daemonset"),
	}
	c.children = reconcile.Children[*corev1.Pod]{Writer: cfg.Pods, Expectations: &c.expectations, Recorder: cfg.Recorder, Clock: cfg.Clock}
	pods := &reconcile.ChildPods{Expectations: &c.expectations, Clock: cfg.Clock, Owner: c.owner, Selecting: c.selecting, Counts: counts}
	c.Controller = reconcile.NewController("daemonset", cfg.Options).
		For(cfg.DaemonSetInformer, c.forget).
		Watches(cfg.PodInformer, pods.Events).
		Map(cfg.NodeInformer, c.allDaemonSets).
		Owns(cfg.RevisionInformer, Kind).
		Complete(c)
	pods.Controller = c.Controller
	return c
}

func (c *Controller) forget(key string) {
	c.expectations.Forget(key)
	c.written.Forget(key)
	c.failed.Forget(key)
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// allDaemonSets are the keys of every DaemonSet: a node's change may bear on any of them.
func (c *Controller) allDaemonSets(runtime.Object) []string {
	dss, _ := c.dss.List(nil)
	keys := make([]string, 0, len(dss))
	for _, ds := range dss {
		keys = append(keys, keyOf(ds.Namespace, ds.Name))
	}
	return keys
}

func (c *Controller) owner(obj runtime.Object) string {
	return reconcile.CachedOwnerKey(c.dss, obj, Kind)
}

// counts reports whether a pod's change bears on its DaemonSet's placement: its labels, its
// controller, its deletion, its phase or its node.
func counts(old, pod *corev1.Pod) bool {
	controlled := func(p *corev1.Pod) bool { return metav1.GetControllerOfNoCopy(p) != nil }
	return !labels.Equals(old.Labels, pod.Labels) || controlled(old) != controlled(pod) ||
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) || old.Status.Phase != pod.Status.Phase ||
		old.Spec.NodeName != pod.Spec.NodeName
}

// selecting are the DaemonSets whose selector matches pod: who may adopt an orphan.
func (c *Controller) selecting(pod *corev1.Pod) []string {
	dss, _ := c.dss.ListNamespace(pod.Namespace, nil)
	var keys []string
	for _, ds := range dss {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			keys = append(keys, keyOf(ds.Namespace, ds.Name))
		}
	}
	return keys
}

// Reconcile brings the DaemonSet of key to its spec: its current revision recorded, its
// pods placed and rolled, old revisions pruned and its status written.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.dss.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.forget(key)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.written.Behind(key, cached.ResourceVersion, now) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	ds := cached.DeepCopy()
	nodes, err := c.nodes.List(nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := c.claim(ctx, ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	byNode := ByNode(pods)
	if ds.DeletionTimestamp != nil {
		// Being deleted: the garbage collector takes the pods, as upstream leaves them.
		return reconcile.Result{}, nil
	}
	cur, old, err := c.revision(ctx, ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	hash := cur.Labels[history.HashLabel]

	var manageErr error
	var retry time.Duration
	if c.expectations.Satisfied(key, now) {
		held := func(node string) time.Duration { return c.failed.SinceNext(backoff.Key(key, node)) }
		d := Decide(ds, nodes, byNode, hash, held, now)
		retry = d.Retry
		if !d.Empty() {
			manageErr = c.act(ctx, key, ds, d, hash)
		} else {
			manageErr = c.truncateHistory(ctx, ds, old, pods)
		}
	}
	res, err := c.writeStatus(ctx, key, ds, nodes, byNode, hash, now)
	if retry > 0 && (res.RequeueAfter == 0 || retry < res.RequeueAfter) {
		res.RequeueAfter = retry
	}
	return res, errors.Join(manageErr, err)
}

// act creates and deletes what the decision says.
func (c *Controller) act(ctx context.Context, key string, ds *appsv1.DaemonSet, d Decision, hash string) error {
	var errs []error
	for _, node := range slices.Sorted(maps.Keys(d.Failed)) {
		p := d.Failed[node]
		c.failed.Next(backoff.Key(key, node), 0)
		c.cfg.Recorder.Eventf(ds, corev1.EventTypeWarning, EventFailedDaemonPod, "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node)
	}
	if len(d.Delete) > 0 {
		if err := c.children.Delete(ctx, ds, key, d.Delete); err != nil {
			errs = append(errs, fmt.Errorf("delete pods of daemonset %s: %w", key, err))
		}
	}
	if len(d.Create) > 0 {
		made, err := c.children.Create(ctx, ds, key, len(d.Create), func(i int) *corev1.Pod { return NewPod(ds, d.Create[i], hash) })
		if err != nil {
			errs = append(errs, fmt.Errorf("create pods of daemonset %s: %w", key, err))
		}
		c.log.Debug("created pods", "key", key, "count", made)
	}
	return errors.Join(errs...)
}

// claim returns ds's active pods, adopting the orphans its selector matches and releasing
// the ones it controls that no longer match.
func (c *Controller) claim(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	all, err := c.pods.ListNamespace(ds.Namespace, nil)
	if err != nil {
		return nil, err
	}
	var owned []*corev1.Pod
	for _, p := range all {
		ref := metav1.GetControllerOfNoCopy(p)
		matches := sel.Matches(labels.Set(p.Labels))
		switch {
		case ref != nil && ref.UID == ds.UID && matches:
			owned = append(owned, p)
		case ref != nil && ref.UID == ds.UID && ds.DeletionTimestamp == nil:
			if _, err := reconcile.Release(ctx, c.cfg.Pods, p, ds.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return nil, fmt.Errorf("release pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		case ref == nil && matches && ds.DeletionTimestamp == nil && p.DeletionTimestamp == nil:
			adopted, err := reconcile.Adopt(ctx, c.cfg.Pods, p, ownerRef(ds.ObjectMeta, Kind))
			if errors.Is(err, apierror.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			owned = append(owned, adopted)
		}
	}
	return owned, nil
}

// revision returns ds's current ControllerRevision, made or renumbered as needed, and its
// older ones, oldest first.
func (c *Controller) revision(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	all, err := c.revisions.ListNamespace(ds.Namespace, nil)
	if err != nil {
		return nil, nil, err
	}
	var mine []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil && ref.UID == ds.UID {
			mine = append(mine, r)
		}
	}
	history.Sort(mine)
	data, err := history.TemplatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	next := history.Next(mine)
	want := history.New(ds, Kind, ds.Spec.Template.Labels, data, next, ds.Status.CollisionCount)
	equal := history.FindEqual(mine, want)
	switch {
	case len(equal) > 0 && equal[len(equal)-1].Revision == next-1:
		cur = equal[len(equal)-1]
	case len(equal) > 0:
		// Back to an older template (a rollback): it becomes the newest revision again.
		r := equal[len(equal)-1].DeepCopy()
		r.Revision = next
		if cur, err = c.cfg.Revisions.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("renumber controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	default:
		cur, err = c.cfg.Revisions.Create(ctx, want, metav1.CreateOptions{})
		if errors.Is(err, apierror.ErrAlreadyExists) {
			existing, gerr := c.cfg.Revisions.Get(ctx, want.Namespace, want.Name, metav1.GetOptions{})
			if gerr != nil {
				return nil, nil, gerr
			}
			if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == ds.UID && history.Equal(existing, want) {
				return existing, othersThan(mine, existing), nil
			}
			// A hash collision: the next try hashes with a higher count, as upstream.
			count := int32(0)
			if ds.Status.CollisionCount != nil {
				count = *ds.Status.CollisionCount
			}
			count++
			ds.Status.CollisionCount = &count
			if _, serr := c.cfg.DaemonSets.UpdateStatus(ctx, ds, metav1.UpdateOptions{}); serr != nil {
				return nil, nil, serr
			}
			return nil, nil, fmt.Errorf("controllerrevision %s collides: collision count now %d", want.Name, count)
		} else if err != nil {
			return nil, nil, fmt.Errorf("create controllerrevision %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	return cur, othersThan(mine, cur), nil
}

func othersThan(revs []*appsv1.ControllerRevision, cur *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revs {
		if r.Name != cur.Name {
			out = append(out, r)
		}
	}
	return out
}

// truncateHistory deletes the oldest revisions no pod runs beyond revisionHistoryLimit.
func (c *Controller) truncateHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	for _, r := range Prune(old, pods, ds.Spec.RevisionHistoryLimit) {
		err := c.cfg.Revisions.Delete(ctx, r.Namespace, r.Name, metav1.DeleteOptions{})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("delete controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}

// writeStatus writes ds's status when it changed, and says when to look again for a pod
// about to become available.
func (c *Controller) writeStatus(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, now time.Time) (reconcile.Result, error) {
	st, next := Status(ds, nodes, byNode, hash, now)
	if !equality.Semantic.DeepEqual(st, ds.Status) {
		ds.Status = st
		out, err := c.cfg.DaemonSets.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, fmt.Errorf("update status of daemonset %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}
