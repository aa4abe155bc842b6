package tables

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default-class annotations, the GA one and the beta one Kubernetes still honours.
const (
	defaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// StorageClass is how kubectl get shows StorageClasses.
var StorageClass = NewPrinter(storageClassColumns, storageClassRow)

var storageClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Provisioner", Type: "string", Description: "Indicates the type of the provisioner."},
	{Name: "ReclaimPolicy", Type: "string", Description: "Indicates the type of the reclaim policy."},
	{Name: "VolumeBindingMode", Type: "string", Description: "Indicates the mode of the volume binding."},
	{Name: "AllowVolumeExpansion", Type: "string", Description: "Indicates whether the storage class allow volume expand."},
	ageColumn,
}

func storageClassRow(sc *storagev1.StorageClass, now time.Time) metav1.TableRow {
	name := sc.Name
	if sc.Annotations[defaultClassAnnotation] == "true" || sc.Annotations[betaDefaultClassAnnotation] == "true" {
		name += " (default)"
	}
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	binding := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return metav1.TableRow{Cells: []any{name, sc.Provisioner, reclaim, binding, expansion, age(sc.CreationTimestamp, now)}}
}
