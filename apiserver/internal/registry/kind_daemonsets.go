package registry

import (
	appsv1 "k8s.io/api/apps/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// DaemonSets run one pod on each node that suits their template. The server counts their
// templates in an annotation, as apps/v1 shows it.
var _ = register(Kind[*appsv1.DaemonSet]{
	Resource:         served("daemonsets"),
	PrepareForCreate: defaults.PrepareDaemonSet,
	KeepOnUpdate:     defaults.KeepDaemonSetTemplateGeneration,
	Default:          defaults.DaemonSet,
	Validation:       validation.DaemonSet,
	Table:            tables.DaemonSet,
})
