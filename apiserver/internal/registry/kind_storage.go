package registry

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds of persistent storage.

var _ = register(Kind[*corev1.PersistentVolume]{
	Resource:   served("persistentvolumes"),
	Default:    defaults.PersistentVolume,
	Validation: validation.PersistentVolume,
	Table:      tables.PersistentVolume,
})

// PersistentVolumeClaims are selectable by phase.
var _ = register(Kind[*corev1.PersistentVolumeClaim]{
	Resource:   served("persistentvolumeclaims"),
	Default:    defaults.PersistentVolumeClaim,
	Validation: validation.PersistentVolumeClaim,
	Fields:     claimFields,
	Table:      tables.PersistentVolumeClaim,
})

func claimFields(pvc *corev1.PersistentVolumeClaim) fields.Set {
	return fields.Set{"status.phase": string(pvc.Status.Phase)}
}

var _ = register(Kind[*storagev1.StorageClass]{
	Resource:   served("storageclasses"),
	Default:    defaults.StorageClass,
	Validation: validation.StorageClass,
	Table:      tables.StorageClass,
})
