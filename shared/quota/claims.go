package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/storageclass"
)

// StorageClassSuffix joins a StorageClass name and a claim resource into the quota resource
// of that class: gold.storageclass.storage.k8s.io/requests.storage.
const StorageClassSuffix = ".storageclass.storage.k8s.io/"

var claimResources = []corev1.ResourceName{
	"count/persistentvolumeclaims", corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage,
}

// claims count themselves and the storage they request, in all and per StorageClass.
type claims struct{}

func (claims) GroupResource() schema.GroupResource {
	return schema.GroupResource{Resource: "persistentvolumeclaims"}
}
func (claims) ChargesUpdates() bool { return true }

func (claims) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	out := Intersection(names, claimResources)
	for _, n := range names {
		_, res, ok := strings.Cut(string(n), StorageClassSuffix)
		if ok && (res == string(corev1.ResourcePersistentVolumeClaims) || res == string(corev1.ResourceRequestsStorage)) {
			out = append(out, n)
		}
	}
	return out
}

// MatchesScope: the VolumeAttributesClass scope, by the class the claim names or has.
func (claims) MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pvc, err := asClaim(obj)
	if err != nil || sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, err
	}
	var values []string
	if c := pvc.Spec.VolumeAttributesClassName; c != nil {
		values = append(values, *c)
	}
	if c := pvc.Status.CurrentVolumeAttributesClassName; c != nil {
		values = append(values, *c)
	}
	return selectorMatches(sel, values...)
}

func (claims) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

func (claims) Usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	pvc, err := asClaim(obj)
	if err != nil {
		return nil, err
	}
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims: one(),
		"count/persistentvolumeclaims":        one(),
	}
	class := storageclass.OfClaim(pvc)
	if class != "" {
		out[corev1.ResourceName(class+StorageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
	}
	if storage, ok := claimStorage(pvc); ok {
		out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
		if class != "" {
			out[corev1.ResourceName(class+StorageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage
		}
	}
	return out, nil
}

// claimStorage is the storage a claim charges: what it requests, in whole bytes, or what was
// allocated to it when more.
func claimStorage(pvc *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if ok {
		req = req.DeepCopy()
		req.RoundUp(0)
	}
	if alloc, has := pvc.Status.AllocatedResources[corev1.ResourceStorage]; has && (!ok || alloc.Cmp(req) > 0) {
		return alloc.DeepCopy(), true
	}
	return req, ok
}

func asClaim(obj runtime.Object) (*corev1.PersistentVolumeClaim, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("quota: expected a persistentvolumeclaim, got %T", obj)
	}
	return pvc, nil
}
