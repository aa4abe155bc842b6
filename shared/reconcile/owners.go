package reconcile

import (
	"context"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
)

// SetOwners replaces obj's ownerReferences with refs through w. A merge patch replaces the
// whole list, so the patch carries obj's resourceVersion, which makes the apiserver refuse it
// (Conflict) if obj changed since it was read, and its uid, a precondition where the server
// checks it as Kubernetes does.
func SetOwners[T runtime.Object](ctx context.Context, w client.Writer[T], obj metav1.Object, refs []metav1.OwnerReference) (T, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{} // "ownerReferences": [] rather than null
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "uid": obj.GetUID(), "resourceVersion": obj.GetResourceVersion(),
	}})
	if err != nil {
		var zero T
		return zero, err
	}
	return w.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.MergePatchType, patch)
}

// Adopt adds the controller reference ref to obj's owners, as SetOwners writes them.
func Adopt[T runtime.Object](ctx context.Context, w client.Writer[T], obj metav1.Object, ref metav1.OwnerReference) (T, error) {
	return SetOwners(ctx, w, obj, append(slices.Clone(obj.GetOwnerReferences()), ref))
}

// Release drops obj's references to the owner with uid, as SetOwners writes them.
func Release[T runtime.Object](ctx context.Context, w client.Writer[T], obj metav1.Object, owner types.UID) (T, error) {
	refs := slices.DeleteFunc(slices.Clone(obj.GetOwnerReferences()), func(r metav1.OwnerReference) bool { return r.UID == owner })
	return SetOwners(ctx, w, obj, refs)
}

// CachedOwnerKey is OwnerKey when owners, the cache of kind owner, holds the owner with the
// reference's uid, and "" otherwise: an owner gone, or replaced by another of its name, owns
// nothing.
func CachedOwnerKey[T runtime.Object](owners informer.Lister[T], obj runtime.Object, owner schema.GroupVersionKind) string {
	ref := ControllerOf(obj, owner)
	if ref == nil {
		return ""
	}
	m, _ := meta.Accessor(obj) // ControllerOf found a reference: obj has metadata
	o, err := owners.Get(m.GetNamespace(), ref.Name)
	if err != nil {
		return ""
	}
	if om, err := meta.Accessor(o); err != nil || om.GetUID() != ref.UID {
		return ""
	}
	return OwnerKey(obj, owner)
}
