package ingress

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// annotatePod sets one annotation on pod (a merge patch).
func annotatePod(ctx context.Context, w client.Writer[*corev1.Pod], pod *corev1.Pod, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{key: value},
		// Only the pod we delivered to: a new pod of the same name must not be marked.
		"uid": pod.UID,
	}})
	if err != nil {
		return err
	}
	_, err = w.Patch(ctx, pod.Namespace, pod.Name, types.MergePatchType, patch)
	return err
}

// recordConfig stores the rendered configuration in the ConfigMap name of namespace.
func recordConfig(ctx context.Context, w client.Writer[*corev1.ConfigMap], namespace, name string, conf []byte) error {
	cm, err := w.Get(ctx, namespace, name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{LabelManagedBy: ManagedBy}},
			Data: map[string]string{ConfigMapKey: string(conf)}}
		_, err = w.Create(ctx, cm, metav1.CreateOptions{})
		return err
	} else if err != nil {
		return err
	}
	if cm.Data[ConfigMapKey] == string(conf) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ConfigMapKey] = string(conf)
	_, err = w.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
