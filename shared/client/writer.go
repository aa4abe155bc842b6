package client

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Writer is what a controller does to one kind through the API: it reads from its caches, and
// past them only to check what it is about to act on. Typed is the real one; package
// client/fake holds an in-memory one for controllers' unit tests.
type Writer[T runtime.Object] interface {
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, subresource ...string) (T, error)
	Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

var _ Writer[*metav1.PartialObjectMetadata] = (*Typed[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList])(nil)
