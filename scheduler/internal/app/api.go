package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
)

// apiWriter binds pods and writes their status through the REST client.
type apiWriter struct {
	cl   *client.Client
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
}

func (a apiWriter) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	b := &corev1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if _, err := a.cl.Post().Resource(a.pods.Resource(), pod.Namespace, pod.Name, "binding").Body(b).Do(ctx); err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

func (a apiWriter) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	p, err := a.pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return p, nil
}

// volumeCache is the scheduler's view of claims and volumes, from its informers.
type volumeCache struct {
	claims  informer.Lister[*corev1.PersistentVolumeClaim]
	volumes informer.Lister[*corev1.PersistentVolume]
}

func (v volumeCache) Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	c, err := v.claims.Get(namespace, name)
	return c, err == nil
}

func (v volumeCache) Volume(name string) (*corev1.PersistentVolume, bool) {
	pv, err := v.volumes.Get("", name)
	return pv, err == nil
}
