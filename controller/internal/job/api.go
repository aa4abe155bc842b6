package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// API is what the controller writes in the apiserver.
type API interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes the pod with this uid, gracefully.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	UpdateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
}

// Recorder reports events; shared/record's Recorder and Fake satisfy it.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

// ClientAPI is API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{pods: client.MustFor[*corev1.Pod, *corev1.PodList](c), jobs: client.MustFor[*batchv1.Job, *batchv1.JobList](c)}
}

type clientAPI struct {
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
	jobs *client.Typed[*batchv1.Job, *batchv1.JobList]
}

func (a clientAPI) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Create(ctx, pod, metav1.CreateOptions{})
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.pods.Delete(ctx, namespace, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a clientAPI) UpdateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return a.jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
}
