package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds that run and scale pods for the user.

var _ = register(Kind[*appsv1.Deployment]{
	Resource:   served("deployments"),
	Default:    defaults.Deployment,
	Validation: validation.Deployment,
	Table:      tables.Deployment,
})

var _ = register(Kind[*appsv1.ReplicaSet]{
	Resource:   served("replicasets"),
	Default:    defaults.ReplicaSet,
	Validation: validation.ReplicaSet,
	Table:      tables.ReplicaSet,
})

// ControllerRevisions hold the templates DaemonSets and StatefulSets have had, for rollbacks.
var _ = register(Kind[*appsv1.ControllerRevision]{
	Resource:   served("controllerrevisions"),
	Validation: validation.ControllerRevision,
	Table:      tables.ControllerRevision,
})

// Jobs keep their generated selector through an update that leaves it out, and, in
// batch/v1, orphan their pods unless the delete says otherwise, as Kubernetes keeps for
// compatibility (kubectl asks for Background).
var _ = register(Kind[*batchv1.Job]{
	Resource:     served("jobs"),
	Default:      defaults.Job,
	KeepOnUpdate: defaults.KeepJobSelector,
	Validation:   validation.Job,
	Table:        tables.Job,
	GCPolicy:     OrphanDependents,
})

var _ = register(Kind[*autoscalingv2.HorizontalPodAutoscaler]{
	Resource:   served("horizontalpodautoscalers"),
	Default:    defaults.HorizontalPodAutoscaler,
	Validation: validation.HorizontalPodAutoscaler,
	Table:      tables.HorizontalPodAutoscaler,
})
