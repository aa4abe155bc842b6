package resourcequota

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/quota"
)

// Objects lists the objects of one resource in a namespace.
type Objects func(gr schema.GroupResource, namespace string) ([]runtime.Object, error)

// Status is what q's status should be: hard as its spec says, and used recounted from the
// objects of each of counted in q's namespace, for every limited resource an evaluator counts
// (a resource none counts keeps what was recorded). recheck, when not zero, is when the count
// changes without any event: a deleted pod's grace period ends and it stops counting.
func Status(q *corev1.ResourceQuota, counted []schema.GroupResource, objects Objects, now time.Time) (st corev1.ResourceQuotaStatus, recheck time.Time, err error) {
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	names := quota.ResourceNames(hard)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	selectors := quota.ScopeSelectors(q)
	var errs []error
	for _, gr := range counted {
		e := quota.For(gr)
		if len(e.MatchingResources(names)) == 0 {
			continue
		}
		objs, err := objects(gr, q.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", gr, err))
			continue
		}
		u, err := quota.Usage(e, names, selectors, objs, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("count %s: %w", gr, err))
			continue
		}
		for name, v := range u {
			used[name] = v
		}
		if gr == (schema.GroupResource{Resource: "pods"}) {
			recheck = earliest(recheck, graceEnds(e, selectors, objs, now))
		}
	}
	return corev1.ResourceQuotaStatus{Hard: hard, Used: quota.Mask(used, names)}, recheck, errors.Join(errs...)
}

// graceEnds is the soonest a pod of objs that the quota counts stops counting because its
// deletion's grace period ends.
func graceEnds(e quota.Evaluator, selectors []corev1.ScopedResourceSelectorRequirement, objs []runtime.Object, now time.Time) time.Time {
	var soonest time.Time
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !quota.Running(pod, now) {
			continue
		}
		if in, err := quota.InScopes(e, selectors, pod); err != nil || !in {
			continue
		}
		if end, ok := quota.GraceEnd(pod); ok {
			soonest = earliest(soonest, end)
		}
	}
	return soonest
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Equal reports whether two statuses hold the same quantities.
func Equal(a, b corev1.ResourceQuotaStatus) bool {
	return quota.Equals(a.Hard, b.Hard) && quota.Equals(a.Used, b.Used)
}

// Counts reports whether a quota limiting hard counts objects of gr.
func Counts(hard corev1.ResourceList, gr schema.GroupResource) bool {
	return len(quota.For(gr).MatchingResources(quota.ResourceNames(hard))) > 0
}

// UsageChanged reports whether an update of an object of gr changes what it counts for, so
// that quotas must be recounted: a pod that finished or began its deletion, a Service whose
// type or ports changed, a claim resized. Admission already charged creates and updates that
// raise usage; what lowers it only the controller sees.
func UsageChanged(gr schema.GroupResource, old, obj runtime.Object, now time.Time) bool {
	if op, ok := old.(*corev1.Pod); ok {
		np, _ := obj.(*corev1.Pod)
		return np != nil && (quota.Running(op, now) != quota.Running(np, now) || (op.DeletionTimestamp == nil) != (np.DeletionTimestamp == nil))
	}
	e := quota.For(gr)
	if !e.ChargesUpdates() {
		return false
	}
	before, err1 := e.Usage(old, now)
	after, err2 := e.Usage(obj, now)
	return err1 != nil || err2 != nil || !quota.Equals(before, after)
}

// sortedResources orders resources so recounts read them in a fixed order.
func sortedResources(grs []schema.GroupResource) []schema.GroupResource {
	out := slices.Clone(grs)
	slices.SortFunc(out, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}
