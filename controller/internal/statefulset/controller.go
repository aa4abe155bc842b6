package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Event reasons, upstream's.
const (
	EventSuccessfulCreate = reconcile.EventSuccessfulCreate
	EventFailedCreate     = reconcile.EventFailedCreate
	EventSuccessfulDelete = reconcile.EventSuccessfulDelete
	EventFailedDelete     = reconcile.EventFailedDelete
	EventSuccessfulUpdate = "SuccessfulUpdate"
	EventFailedUpdate     = "FailedUpdate"
)

// Config wires a Controller.
type Config struct {
	SetInformer, PodInformer, RevisionInformer, ClaimInformer *informer.Informer

	Sets      client.Writer[*appsv1.StatefulSet]
	Pods      client.Writer[*corev1.Pod]
	Revisions client.Writer[*appsv1.ControllerRevision]
	Claims    client.Writer[*corev1.PersistentVolumeClaim]
	Recorder  record.EventRecorder
	reconcile.Options
}

// Controller keeps every StatefulSet's pods, claims and revisions. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg       Config
	sets      informer.Lister[*appsv1.StatefulSet]
	pods      informer.Lister[*corev1.Pod]
	revisions informer.Lister[*appsv1.ControllerRevision]
	claims    informer.Lister[*corev1.PersistentVolumeClaim]
	written   reconcile.Written
	log       *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:       cfg,
		sets:      informer.NewLister[*appsv1.StatefulSet](cfg.SetInformer.Store()),
		pods:      informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		revisions: informer.NewLister[*appsv1.ControllerRevision](cfg.RevisionInformer.Store()),
		claims:    informer.NewLister[*corev1.PersistentVolumeClaim](cfg.ClaimInformer.Store()),
		log:       cfg.Logger.With("controller", "statefulset"),
	}
	c.Controller = reconcile.NewController("statefulset", cfg.Options).
		For(cfg.SetInformer, c.written.Forget).
		Owns(cfg.PodInformer, Kind).
		Owns(cfg.RevisionInformer, Kind).
		Reads(cfg.ClaimInformer).
		Complete(c)
	return c
}

// Reconcile brings the StatefulSet of key one step nearer its spec and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.sets.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.written.Behind(key, cached.ResourceVersion, now) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	set := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, nil // the apiserver validates selectors: not reached
	}
	pods, err := c.ownPods(ctx, set, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	if set.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	current, update, collisions, err := c.revisionsOf(ctx, set, sel, pods)
	if err != nil {
		return reconcile.Result{}, err
	}

	plan := Decide(set, pods, update.Name, now)
	manageErr := c.apply(ctx, set, plan, pods, current, update)

	st, next := Status(set, pods, current.Name, update.Name, collisions, now)
	if err := c.truncateHistory(ctx, set, sel, pods, current, update); err != nil {
		manageErr = errors.Join(manageErr, err)
	}
	if !equalStatus(set.Status, st) {
		set.Status = st
		out, err := c.cfg.Sets.UpdateStatus(ctx, set, metav1.UpdateOptions{})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, errors.Join(manageErr, fmt.Errorf("update status of statefulset %s: %w", key, err))
		}
		if err == nil {
			c.written.Wrote(key, out.ResourceVersion, now)
		}
	}
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

func equalStatus(a, b appsv1.StatefulSetStatus) bool {
	pa, pb := a.CollisionCount, b.CollisionCount
	return a.ObservedGeneration == b.ObservedGeneration && a.Replicas == b.Replicas && a.ReadyReplicas == b.ReadyReplicas &&
		a.CurrentReplicas == b.CurrentReplicas && a.UpdatedReplicas == b.UpdatedReplicas && a.AvailableReplicas == b.AvailableReplicas &&
		a.CurrentRevision == b.CurrentRevision && a.UpdateRevision == b.UpdateRevision &&
		(pa == nil) == (pb == nil) && (pa == nil || *pa == *pb)
}

// ownPods are set's pods: those it controls, and orphans with its selector and one of its
// pod names, which it adopts (after checking with the apiserver that set is still itself).
func (c *Controller) ownPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.pods.ListNamespace(set.Namespace, nil)
	if err != nil {
		return nil, err
	}
	var own, orphans []*corev1.Pod
	for _, p := range all {
		ref := metav1.GetControllerOfNoCopy(p)
		switch {
		case ref != nil && ref.UID == set.UID:
			if sel.Matches(labels.Set(p.Labels)) {
				own = append(own, p)
			} else if _, err := reconcile.Release(ctx, c.cfg.Pods, p, set.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return nil, fmt.Errorf("release pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		case ref == nil && p.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Labels)) && Ordinal(set.Name, p) >= 0:
			orphans = append(orphans, p)
		}
	}
	if len(orphans) == 0 || set.DeletionTimestamp != nil {
		return own, nil
	}
	fresh, err := c.cfg.Sets.Get(ctx, set.Namespace, set.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("recheck statefulset %s/%s before adopting: %w", set.Namespace, set.Name, err)
	}
	if fresh.UID != set.UID || fresh.DeletionTimestamp != nil {
		return own, nil
	}
	for _, p := range orphans {
		adopted, err := reconcile.Adopt(ctx, c.cfg.Pods, p, *metav1.NewControllerRef(set, Kind))
		if errors.Is(err, apierror.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		own = append(own, adopted)
	}
	return own, nil
}

// apply carries out plan: each new pod after its claims, then the deletions; claims of
// condemned pods first get the owners the retention policy asks for.
func (c *Controller) apply(ctx context.Context, set *appsv1.StatefulSet, plan Plan, pods []*corev1.Pod, current, update *appsv1.ControllerRevision) error {
	if plan.Waiting != "" {
		c.log.Debug("waiting for pod", "key", set.Namespace+"/"+set.Name, "pod", plan.Waiting)
	}
	var errs []error
	templates := map[string]*corev1.PodTemplateSpec{}
	for _, rev := range []*appsv1.ControllerRevision{current, update} {
		tmpl, err := TemplateOf(rev)
		if err != nil {
			return err
		}
		templates[rev.Name] = tmpl
	}
	create := func(ctx context.Context, ordinal int) error {
		rev := RevisionFor(set, ordinal, current.Name, update.Name)
		if err := c.ensureClaims(ctx, set, ordinal, nil); err != nil {
			c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, EventFailedCreate, "create Claim for Pod %s in StatefulSet %s failed error: %v", PodName(set, ordinal), set.Name, err)
			return err
		}
		pod := NewPod(set, templates[rev], ordinal, rev)
		_, err := c.cfg.Pods.Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case errors.Is(err, apierror.ErrAlreadyExists):
			// The cache is behind: the pod is there.
		case err != nil:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, EventFailedCreate, "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
			return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
		default:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, EventSuccessfulCreate, "create Pod %s in StatefulSet %s successful", pod.Name, set.Name)
		}
		return nil
	}
	for _, p := range plan.Fix {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": IdentityLabels(set, p), "uid": p.UID}})
		if err != nil {
			return err
		}
		_, err = c.cfg.Pods.Patch(ctx, p.Namespace, p.Name, types.MergePatchType, patch)
		switch {
		case err == nil:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, EventSuccessfulUpdate, "update Pod %s in StatefulSet %s successful", p.Name, set.Name)
		case errors.Is(err, apierror.ErrNotFound), errors.Is(err, apierror.ErrConflict):
			// Gone or changed since the cache saw it: the next sync looks again.
		default:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, EventFailedUpdate, "update Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err)
			errs = append(errs, fmt.Errorf("update pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	// Parallel pods are made in slow-start batches (1, 2, 4 ...) as upstream: a batch that
	// fails stops the rest.
	var mu sync.Mutex
	next := 0
	if _, _, err := reconcile.SlowStart(ctx, len(plan.Create), 1, reconcile.SlowStartParallel, func(ctx context.Context) error {
		mu.Lock()
		ordinal := plan.Create[next]
		next++
		mu.Unlock()
		return create(ctx, ordinal)
	}); err != nil {
		errs = append(errs, err)
	}
	// The claims of pods kept get the set's references; those of condemned pods, their pod's.
	for _, p := range pods {
		if p.DeletionTimestamp == nil && Ordinal(set.Name, p) >= 0 {
			if err := c.ensureClaims(ctx, set, Ordinal(set.Name, p), p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, p := range plan.Delete {
		uid := p.UID
		err := c.cfg.Pods.Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, EventSuccessfulDelete, "delete Pod %s in StatefulSet %s successful", p.Name, set.Name)
		case errors.Is(err, apierror.ErrNotFound), errors.Is(err, apierror.ErrConflict):
		default:
			c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, EventFailedDelete, "delete Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err)
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ensureClaims makes the claims of ordinal that do not exist (for a pod about to be made, or
// a pending one), and sets the owners the
// retention policy asks for on those that do (pod is the ordinal's pod, or nil).
func (c *Controller) ensureClaims(ctx context.Context, set *appsv1.StatefulSet, ordinal int, pod *corev1.Pod) error {
	for _, want := range NewClaims(set, ordinal) {
		have, err := c.claims.Get(want.Namespace, want.Name)
		if errors.Is(err, apierror.ErrNotFound) {
			if pod != nil && (pod.Status.Phase != corev1.PodPending || !inRange(set, ordinal)) {
				// Only a pod about to be made, or one of the set's pods still pending (waiting
				// for the claim, say after it was deleted), gets claims made.
				continue
			}
			want.OwnerReferences = ClaimOwners(set, want, nil, ordinal)
			if _, err := c.cfg.Claims.Create(ctx, want, metav1.CreateOptions{}); err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
				return fmt.Errorf("create claim %s/%s: %w", want.Namespace, want.Name, err)
			} else if err == nil {
				c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, EventSuccessfulCreate, "create Claim %s Pod %s in StatefulSet %s success", want.Name, PodName(set, ordinal), set.Name)
			}
			continue
		} else if err != nil {
			return err
		}
		if have.DeletionTimestamp != nil {
			return fmt.Errorf("claim %s/%s is being deleted", have.Namespace, have.Name)
		}
		refs := ClaimOwners(set, have, pod, ordinal)
		if sameOwners(refs, have.OwnerReferences) {
			continue
		}
		if _, err := reconcile.SetOwners(ctx, c.cfg.Claims, have, refs); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("set owners of claim %s/%s: %w", have.Namespace, have.Name, err)
		}
	}
	return nil
}

// revisionsOf finds or makes the revision of set's template (the update revision) and
// finds the current one (status.currentRevision, the update revision when there is none),
// as upstream: an equal older revision is renumbered rather than duplicated, and a name
// taken by different data bumps the collision count.
func (c *Controller) revisionsOf(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector, pods []*corev1.Pod) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	revs := c.ownRevisions(set, sel)
	history.Sort(revs)
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	data, err := history.TemplatePatch(set)
	if err != nil {
		return nil, nil, 0, err
	}
	for {
		want := history.New(set, Kind, set.Spec.Template.Labels, data, history.Next(revs), &collisions)
		equal := history.FindEqual(revs, want)
		switch {
		case len(equal) > 0 && equal[len(equal)-1] == revs[len(revs)-1]:
			update = revs[len(revs)-1]
		case len(equal) > 0:
			r := equal[len(equal)-1].DeepCopy()
			r.Revision = want.Revision
			update, err = c.cfg.Revisions.Update(ctx, r, metav1.UpdateOptions{})
			if err != nil {
				return nil, nil, 0, fmt.Errorf("renumber revision %s/%s: %w", r.Namespace, r.Name, err)
			}
		default:
			update, err = c.cfg.Revisions.Create(ctx, want, metav1.CreateOptions{})
			if errors.Is(err, apierror.ErrAlreadyExists) {
				existing, gerr := c.cfg.Revisions.Get(ctx, want.Namespace, want.Name, metav1.GetOptions{})
				if gerr != nil {
					return nil, nil, 0, gerr
				}
				if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == set.UID && history.Equal(existing, want) {
					update = existing
					break
				}
				collisions++
				continue
			}
			if err != nil {
				return nil, nil, 0, fmt.Errorf("create revision %s/%s: %w", want.Namespace, want.Name, err)
			}
		}
		break
	}
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	if current == nil || current.Name == update.Name {
		current = update
	}
	return current, update, collisions, nil
}

func (c *Controller) ownRevisions(set *appsv1.StatefulSet, sel labels.Selector) []*appsv1.ControllerRevision {
	all, _ := c.revisions.ListNamespace(set.Namespace, nil)
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil && ref.UID == set.UID && sel.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	return out
}

// truncateHistory deletes the oldest revisions no pod uses beyond revisionHistoryLimit,
// never the current or the update revision.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector, pods []*corev1.Pod, current, update *appsv1.ControllerRevision) error {
	revs := c.ownRevisions(set, sel)
	live := map[string]bool{current.Name: true, update.Name: true}
	for _, p := range pods {
		live[Revision(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if len(old) <= limit {
		return nil
	}
	history.Sort(old)
	for _, r := range old[:len(old)-limit] {
		if err := c.cfg.Revisions.Delete(ctx, r.Namespace, r.Name, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return fmt.Errorf("delete revision %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}
