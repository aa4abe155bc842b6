package registry

import (
	appsv1 "k8s.io/api/apps/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// DaemonSets run one pod on each node that suits their template.
var _ = register(Kind[*appsv1.DaemonSet]{
	Resource:   served("daemonsets"),
	Default:    defaults.DaemonSet,
	Validation: validation.DaemonSet,
	Table:      tables.DaemonSet,
})
