package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DeletionTimeout is how long an eviction's record in disruptedPods keeps a pod out of the
// healthy count: past it, the pod is taken as not going after all (Kubernetes' 2 minutes).
const DeletionTimeout = 2 * time.Minute

// Expected is what the pods' controllers want: the sum of their replicas. Err is set when a
// selected pod has no controller whose replicas are known, which a percentage or
// maxUnavailable needs.
type Expected struct {
	Count int32
	Err   error
}

// Status computes a budget's status at now from the pods it selects and what their
// controllers expect. recheck is when an entry of disruptedPods times out (zero for none), so
// the controller looks again then.
func Status(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, expected Expected, now time.Time) (st policyv1.PodDisruptionBudgetStatus, recheck time.Time) {
	st = *pdb.Status.DeepCopy()
	st.ObservedGeneration = pdb.Generation
	disrupted, recheck := stillDisrupted(pdb.Status.DisruptedPods, pods, now)
	st.DisruptedPods = disrupted

	expectedCount, desired, err := desiredHealthy(pdb, pods, expected)
	if err != nil {
		st.DisruptionsAllowed = 0
		setCondition(&st, metav1.ConditionFalse, policyv1.SyncFailedReason, err.Error(), now)
		return st, recheck
	}
	healthy := int32(0)
	for _, p := range pods {
		if _, going := disrupted[p.Name]; going || p.DeletionTimestamp != nil || !ready(p) {
			continue
		}
		healthy++
	}
	st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods = healthy, desired, expectedCount
	st.DisruptionsAllowed = max(healthy-desired, 0)
	if st.DisruptionsAllowed > 0 {
		setCondition(&st, metav1.ConditionTrue, policyv1.SufficientPodsReason, "", now)
	} else {
		setCondition(&st, metav1.ConditionFalse, policyv1.InsufficientPodsReason, "", now)
	}
	return st, recheck
}

// desiredHealthy is how many pods are expected and how many must stay healthy: an integer
// minAvailable counts the selected pods; a percentage or maxUnavailable the controllers'
// replicas, rounding up as Kubernetes does.
func desiredHealthy(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, expected Expected) (count, desired int32, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected.Err != nil {
			return 0, 0, expected.Err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected.Count), true)
		if err != nil {
			return 0, 0, err
		}
		return expected.Count, max(expected.Count-int32(maxUnavailable), 0), nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, nil
	case pdb.Spec.MinAvailable != nil:
		if expected.Err != nil {
			return 0, 0, expected.Err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected.Count), true)
		if err != nil {
			return 0, 0, err
		}
		return expected.Count, int32(minAvailable), nil
	}
	return int32(len(pods)), 0, nil
}

// stillDisrupted keeps the evictions recorded in disruptedPods whose pod is still there, not
// yet being deleted, and recorded less than DeletionTimeout ago.
func stillDisrupted(recorded map[string]metav1.Time, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Time) {
	var recheck time.Time
	out := map[string]metav1.Time{}
	for _, p := range pods {
		at, ok := recorded[p.Name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if !expires.After(now) {
			continue
		}
		out[p.Name] = at
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
	}
	if len(out) == 0 {
		return nil, recheck
	}
	return out, recheck
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition sets DisruptionAllowed, keeping its transition time while its status holds.
func setCondition(st *policyv1.PodDisruptionBudgetStatus, status metav1.ConditionStatus, reason, message string, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: message,
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}
