package replicaset

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/podstatus"
)

// phaseOrder ranks phases for deletion: Pending first, then Unknown, then Running.
var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// RankForDeletion sorts pods so that the ones to delete first come first, in Kubernetes' order
// (its ActivePodsWithRanks): unassigned before assigned; Pending, then Unknown, then Running;
// not ready before ready; pods sharing a node with more of their siblings first (colocated
// counts, per node, the related pods: spreading survives a scale-down); ready for less time
// first; more container restarts first; newer first. Ties keep the order given. Kubernetes
// compares the two times in logarithmic buckets; here they compare exactly, which only
// differs in which of two pods of nearly the same age goes.
func RankForDeletion(pods []*corev1.Pod, related []*corev1.Pod) {
	colocated := map[string]int{}
	for _, p := range related {
		if p.Spec.NodeName != "" && Active(p) {
			colocated[p.Spec.NodeName]++
		}
	}
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(
			// Unassigned first.
			cmp.Compare(boolOrder(a.Spec.NodeName != ""), boolOrder(b.Spec.NodeName != "")),
			cmp.Compare(phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]),
			cmp.Compare(boolOrder(podstatus.Ready(a)), boolOrder(podstatus.Ready(b))),
			// More siblings on its node first.
			cmp.Compare(colocated[b.Spec.NodeName], colocated[a.Spec.NodeName]),
			newerFirst(podstatus.ReadySince(a), podstatus.ReadySince(b), podstatus.Ready(a) && podstatus.Ready(b)),
			cmp.Compare(restarts(b), restarts(a)),
			newerFirst(a.CreationTimestamp.Time, b.CreationTimestamp.Time, true),
		)
	})
}

// newerFirst orders a zero time first, then later times before earlier ones; applies false
// keeps the pair equal.
func newerFirst(a, b time.Time, applies bool) int {
	if !applies || a.Equal(b) {
		return 0
	}
	switch {
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b):
		return -1
	}
	return 1
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}
