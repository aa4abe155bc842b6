package registry

import (
	policyv1 "k8s.io/api/policy/v1"

	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// PodDisruptionBudgets limit evictions (pods/eviction); the disruption controller keeps their
// status, which an eviction spends.
var _ = register(Kind[*policyv1.PodDisruptionBudget]{
	Resource:   served("poddisruptionbudgets"),
	Validation: validation.PodDisruptionBudget,
	Table:      tables.PodDisruptionBudget,
})
