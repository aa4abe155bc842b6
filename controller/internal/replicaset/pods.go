package replicaset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Active reports whether pod counts towards replicas: it has not finished and is not being
// deleted (a terminating pod is replaced at once, as Kubernetes does).
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// readyCondition is pod's Ready condition, nil when it has none.
func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Ready reports whether pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Available reports whether pod has been ready for at least minReadySeconds at now, and
// when not, how long until it will be if it stays ready (0 when it is not ready at all).
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	c := readyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false, 0
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
	if c.LastTransitionTime.IsZero() || !now.Before(at) {
		return true, 0
	}
	return false, at.Sub(now)
}

// ControllerOf is the owner reference of pod with controller: true, nil for an orphan.
func ControllerOf(obj metav1.Object) *metav1.OwnerReference {
	for i, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return &obj.GetOwnerReferences()[i]
		}
	}
	return nil
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

func readySince(pod *corev1.Pod) time.Time {
	if c := readyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}
