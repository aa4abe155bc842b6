package ingress

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// ClientAPI is the controller's API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		namespaces: client.MustFor[*corev1.Namespace, *corev1.NamespaceList](c),
		services:   client.MustFor[*corev1.Service, *corev1.ServiceList](c),
		pods:       client.MustFor[*corev1.Pod, *corev1.PodList](c),
		configMaps: client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](c),
		ingresses:  client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](c),
	}
}

type clientAPI struct {
	namespaces *client.Typed[*corev1.Namespace, *corev1.NamespaceList]
	services   *client.Typed[*corev1.Service, *corev1.ServiceList]
	pods       *client.Typed[*corev1.Pod, *corev1.PodList]
	configMaps *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList]
	ingresses  *client.Typed[*networkingv1.Ingress, *networkingv1.IngressList]
}

func (a clientAPI) EnsureNamespace(ctx context.Context, name string) error {
	if _, err := a.namespaces.Get(ctx, "", name, metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
		return err
	}
	_, err := a.namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if errors.Is(err, apierror.ErrAlreadyExists) {
		return nil
	}
	return err
}

func (a clientAPI) CreateService(ctx context.Context, svc *corev1.Service) error {
	_, err := a.services.Create(ctx, svc, metav1.CreateOptions{})
	return err
}

func (a clientAPI) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Create(ctx, pod, metav1.CreateOptions{})
}

func (a clientAPI) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	return a.pods.Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

func (a clientAPI) AnnotatePod(ctx context.Context, pod *corev1.Pod, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{key: value},
		// Only the pod we delivered to: a new pod of the same name must not be marked.
		"uid": pod.UID,
	}})
	if err != nil {
		return err
	}
	_, err = a.pods.Patch(ctx, pod.Namespace, pod.Name, types.MergePatchType, patch)
	return err
}

func (a clientAPI) UpdateIngressStatus(ctx context.Context, ing *networkingv1.Ingress) (*networkingv1.Ingress, error) {
	return a.ingresses.UpdateStatus(ctx, ing, metav1.UpdateOptions{})
}

func (a clientAPI) RecordConfig(ctx context.Context, namespace, name string, conf []byte) error {
	cm, err := a.configMaps.Get(ctx, namespace, name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{LabelManagedBy: ManagedBy}},
			Data: map[string]string{ConfigMapKey: string(conf)}}
		_, err = a.configMaps.Create(ctx, cm, metav1.CreateOptions{})
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
	_, err = a.configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
