package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// The eviction's answers, worded as Kubernetes words them (pkg/registry/core/pod/storage/eviction.go).
const (
	budgetViolated = "Cannot evict pod as it would violate the pod's disruption budget."
	// maxDisruptedPods bounds a budget's record of evictions the disruption controller has
	// not yet seen the end of.
	maxDisruptedPods = 2000
	// budgetRetries is how often a budget's status is re-read after losing a write race.
	budgetRetries = 5
)

var pdbResource = mustResource("poddisruptionbudgets")

func mustResource(plural string) *scheme.Resource {
	r, err := scheme.Lookup(plural)
	if err != nil {
		panic(err)
	}
	return r
}

// spendBudget decides whether pod may be evicted under its PodDisruptionBudget and, when it
// may and the budget counts it, takes one disruption from the budget's status (an update
// preconditioned on the resourceVersion read, re-read on a conflict) and records the pod in
// disruptedPods, so that the disruption controller does not count it healthy while it goes.
// A nil error means delete the pod.
func (s *Server) spendBudget(ctx context.Context, pod *corev1.Pod, dry bool) error {
	if budgetIgnores(pod) {
		return nil
	}
	for range budgetRetries {
		pdb, err := s.podBudget(ctx, pod)
		if err != nil || pdb == nil {
			return err
		}
		if !podReady(pod) && unhealthyMayGo(pdb) {
			return nil
		}
		if err := takeDisruption(pdb, pod.Name, time.Now()); err != nil {
			return err
		}
		if dry {
			return nil
		}
		rv := pdb.ResourceVersion
		_, err = s.reg.Update(ctx, registry.Key{Resource: pdbResource, Namespace: pdb.Namespace, Name: pdb.Name},
			registry.UpdateOptions{Subresource: "status"},
			func(_ runtime.Object, _ storage.KV) (runtime.Object, string, error) { return pdb, rv, nil })
		if errors.Is(err, apierror.ErrConflict) {
			continue
		}
		return err
	}
	return apierror.New(apierror.ErrTooManyRequests, "%s", budgetViolated)
}

// budgetIgnores reports whether a pod goes without asking its budget, as in Kubernetes: it
// has finished, has not started, or is already being deleted.
func budgetIgnores(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// podBudget is the one PodDisruptionBudget selecting pod, or nil. A budget with an empty
// selector selects nothing here, as in Kubernetes' eviction.
func (s *Server) podBudget(ctx context.Context, pod *corev1.Pod) (*policyv1.PodDisruptionBudget, error) {
	list, err := s.reg.List(ctx, registry.Key{Resource: pdbResource, Namespace: pod.Namespace}, registry.ListOptions{})
	if err != nil {
		return nil, err
	}
	var found []*policyv1.PodDisruptionBudget
	for _, o := range list.Items {
		pdb, ok := o.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		found = append(found, pdb)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, apierror.New(apierror.ErrInternal, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
}

// unhealthyMayGo reports whether a pod that is not ready may be evicted without spending the
// budget: always under AlwaysAllow, and under IfHealthyBudget (the default) while the
// budget has its healthy pods.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.DesiredHealthy > 0 && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy
}

// takeDisruption spends one of the budget's disruptions on pod at now, or says why it cannot.
func takeDisruption(pdb *policyv1.PodDisruptionBudget, pod string, now time.Time) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequests(fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name), 10)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierror.Forbidden(policyv1.GroupName, "poddisruptionbudget", pdb.Name, "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return apierror.Forbidden(policyv1.GroupName, "poddisruptionbudget", pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		return tooManyRequests(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy), 0)
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		SetDisruptionAllowed(&pdb.Status, now)
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[pod] = metav1.NewTime(now)
	return nil
}

// tooManyRequests is the 429 refusing an eviction, its cause the budget.
func tooManyRequests(cause string, retryAfter int32) error {
	e := apierror.New(apierror.ErrTooManyRequests, "%s", budgetViolated)
	e.Status.Details = &metav1.StatusDetails{
		RetryAfterSeconds: retryAfter,
		Causes:            []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: cause}},
	}
	return e
}

// SetDisruptionAllowed sets the DisruptionAllowed condition from disruptionsAllowed, as
// Kubernetes' pdb helper does: the eviction and the disruption controller agree on it.
func SetDisruptionAllowed(st *policyv1.PodDisruptionBudgetStatus, now time.Time) {
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue,
		Reason: policyv1.SufficientPodsReason, ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	if st.DisruptionsAllowed <= 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			if st.Conditions[i].Status == cond.Status {
				cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
