package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReadyCondition is pod's Ready condition, nil when it has none.
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Ready reports whether pod's Ready condition is True: what the kubelet reports once its
// containers run and their readiness probes pass.
func Ready(pod *corev1.Pod) bool {
	c := ReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ReadySince is when pod last became ready; zero when it is not ready.
func ReadySince(pod *corev1.Pod) time.Time {
	if c := ReadyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// Available reports whether pod has been ready for at least minReadySeconds at now, and when
// not, how long until it will be if it stays ready (0 when it is not ready at all).
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	c := ReadyCondition(pod)
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

// Finished reports whether pod's phase is Succeeded or Failed: it will not run again.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
