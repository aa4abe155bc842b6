package registry

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

var _ = register(Kind[*corev1.ReplicationController]{
	Resource:   served("replicationcontrollers"),
	Default:    defaults.ReplicationController,
	Validation: validation.ReplicationController,
	Table:      tables.ReplicationController,
})
