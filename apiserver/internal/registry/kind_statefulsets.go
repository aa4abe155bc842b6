package registry

import (
	appsv1 "k8s.io/api/apps/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// StatefulSets run pods with stable names, network identities and claims.
var _ = register(Kind[*appsv1.StatefulSet]{
	Resource:   served("statefulsets"),
	Default:    defaults.StatefulSet,
	Validation: validation.StatefulSet,
	Table:      tables.StatefulSet,
})
