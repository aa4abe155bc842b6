package registry

import (
	networkingv1 "k8s.io/api/networking/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// NetworkPolicies are stored and served, not enforced: no component of minik8s filters
// traffic by them, as in a Kubernetes cluster whose network plugin does not.
var _ = register(Kind[*networkingv1.NetworkPolicy]{
	Resource:   served("networkpolicies"),
	Default:    defaults.NetworkPolicy,
	Validation: validation.NetworkPolicy,
	Table:      tables.NetworkPolicy,
})
