package nodestatus

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// NodeClient is the part of the Node API the agent uses. Errors match the apierror sentinels.
type NodeClient interface {
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Create(ctx context.Context, node *corev1.Node, opts metav1.CreateOptions) (*corev1.Node, error)
	Update(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
	UpdateStatus(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
}

// LeaseClient is the part of the Lease API the agent uses.
type LeaseClient interface {
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// API is how the agent reaches the apiserver.
type API struct {
	Nodes  NodeClient
	Leases LeaseClient
}

// ClientAPI is API over the shared REST client.
func ClientAPI(c *client.Client) API {
	return API{
		Nodes:  client.MustFor[*corev1.Node, *corev1.NodeList](c),
		Leases: client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](c),
	}
}
