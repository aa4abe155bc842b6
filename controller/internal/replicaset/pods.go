package replicaset

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/podstatus"
)

// Active reports whether pod counts towards replicas: it has not finished and is not being
// deleted (a terminating pod is replaced at once, as Kubernetes does).
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && !podstatus.Finished(pod)
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}
