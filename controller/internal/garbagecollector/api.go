package garbagecollector

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// API is what the collector reads and writes of any kind, by metadata.
type API interface {
	Get(ctx context.Context, res *scheme.Resource, namespace, name string) (*metav1.PartialObjectMetadata, error)
	// Delete deletes the object if it still has uid and resourceVersion rv.
	Delete(ctx context.Context, res *scheme.Resource, namespace, name string, uid types.UID, rv string, policy metav1.DeletionPropagation) error
	// PatchMetadata merges meta into the object's metadata (a JSON merge patch); its
	// resourceVersion, when set, is a precondition.
	PatchMetadata(ctx context.Context, res *scheme.Resource, namespace, name string, meta map[string]any) error
}

// ClientAPI is the API over the REST client.
func ClientAPI(c *client.Client) API { return clientAPI{c} }

type clientAPI struct{ c *client.Client }

func (a clientAPI) Get(ctx context.Context, res *scheme.Resource, ns, name string) (*metav1.PartialObjectMetadata, error) {
	return client.Metadata(a.c, res).Get(ctx, ns, name, metav1.GetOptions{})
}

func (a clientAPI) Delete(ctx context.Context, res *scheme.Resource, ns, name string, uid types.UID, rv string, policy metav1.DeletionPropagation) error {
	pre := &metav1.Preconditions{UID: &uid}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	return client.Metadata(a.c, res).Delete(ctx, ns, name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy})
}

func (a clientAPI) PatchMetadata(ctx context.Context, res *scheme.Resource, ns, name string, meta map[string]any) error {
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = client.Metadata(a.c, res).Patch(ctx, ns, name, types.MergePatchType, data)
	return err
}
