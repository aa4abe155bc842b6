package nodelifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// deletePod deletes pod, and not another pod since made under its name; grace nil means the
// pod's own grace period.
func deletePod(ctx context.Context, w client.Writer[*corev1.Pod], pod *corev1.Pod, grace *int64) error {
	return w.Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: grace,
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
}
