package replicaset

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// API is what the controller reads and writes in the apiserver.
type API interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes the pod with this uid, gracefully.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// SetPodOwners replaces pod's ownerReferences, guarded by its uid and resourceVersion.
	SetPodOwners(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference) error
	// GetReplicaSet reads a ReplicaSet past the cache, before adopting pods for it.
	GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
}

// Recorder reports events; shared/record's Recorder and Fake satisfy it.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

// ClientAPI is API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		pods: client.MustFor[*corev1.Pod, *corev1.PodList](c),
		rss:  client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c),
	}
}

type clientAPI struct {
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
	rss  *client.Typed[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
}

func (a clientAPI) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Create(ctx, pod, metav1.CreateOptions{})
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.pods.Delete(ctx, namespace, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a clientAPI) SetPodOwners(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	// A merge patch replaces the whole list; the uid and resourceVersion in it make the
	// apiserver refuse it if the pod changed since it was read.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "uid": pod.UID, "resourceVersion": pod.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	_, err = a.pods.Patch(ctx, pod.Namespace, pod.Name, types.MergePatchType, patch)
	return err
}

func (a clientAPI) GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return a.rss.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.rss.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}
