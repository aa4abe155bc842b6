package nodelifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// clientAPI is API over the REST client.
type clientAPI struct {
	nodes *client.Typed[*corev1.Node, *corev1.NodeList]
	pods  *client.Typed[*corev1.Pod, *corev1.PodList]
}

// ClientAPI is the controller's API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		nodes: client.MustFor[*corev1.Node, *corev1.NodeList](c),
		pods:  client.MustFor[*corev1.Pod, *corev1.PodList](c),
	}
}

func (a clientAPI) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return a.nodes.Get(ctx, "", name, metav1.GetOptions{})
}

func (a clientAPI) UpdateNodeStatus(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	return a.nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
}

func (a clientAPI) UpdateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	return a.nodes.Update(ctx, node, metav1.UpdateOptions{})
}

func (a clientAPI) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) error {
	_, err := a.pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID, grace *int64) error {
	return a.pods.Delete(ctx, namespace, name, metav1.DeleteOptions{
		GracePeriodSeconds: grace,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
}
