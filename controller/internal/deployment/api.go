package deployment

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// API is what the controller reads and writes in the apiserver.
type API interface {
	CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	DeleteReplicaSet(ctx context.Context, namespace, name string, uid types.UID) error
	GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// SetReplicaSetOwners replaces rs's ownerReferences, guarded by its resourceVersion.
	SetReplicaSetOwners(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) (*appsv1.ReplicaSet, error)
	GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	// SetDeploymentAnnotation sets one annotation of d.
	SetDeploymentAnnotation(ctx context.Context, d *appsv1.Deployment, key, value string) (*appsv1.Deployment, error)
	UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
}

// Recorder reports events; shared/record's Recorder and Fake satisfy it.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

// ClientAPI is API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		rss: client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c),
		ds:  client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c),
	}
}

type clientAPI struct {
	rss *client.Typed[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
	ds  *client.Typed[*appsv1.Deployment, *appsv1.DeploymentList]
}

func (a clientAPI) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.rss.Create(ctx, rs, metav1.CreateOptions{})
}

func (a clientAPI) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.rss.Update(ctx, rs, metav1.UpdateOptions{})
}

func (a clientAPI) DeleteReplicaSet(ctx context.Context, namespace, name string, uid types.UID) error {
	bg := metav1.DeletePropagationBackground
	return a.rss.Delete(ctx, namespace, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg})
}

func (a clientAPI) GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return a.rss.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (a clientAPI) SetReplicaSetOwners(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) (*appsv1.ReplicaSet, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "resourceVersion": rs.ResourceVersion}})
	if err != nil {
		return nil, err
	}
	return a.rss.Patch(ctx, rs.Namespace, rs.Name, types.MergePatchType, patch)
}

func (a clientAPI) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return a.ds.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (a clientAPI) SetDeploymentAnnotation(ctx context.Context, d *appsv1.Deployment, key, value string) (*appsv1.Deployment, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return nil, err
	}
	return a.ds.Patch(ctx, d.Namespace, d.Name, types.MergePatchType, patch)
}

func (a clientAPI) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.ds.UpdateStatus(ctx, d, metav1.UpdateOptions{})
}
