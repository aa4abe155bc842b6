package registry

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds that lead traffic to pods.

// Services get cluster IPs and node ports from the allocator, and keep them through an
// update that leaves them out.
var _ = register(Kind[*corev1.Service]{
	Resource:     served("services"),
	Default:      defaults.Service,
	KeepOnUpdate: defaults.KeepServiceAllocations,
	Validation:   validation.Service,
	Table:        tables.Service,
	Allocates:    true,
})

var _ = register(Kind[*corev1.Endpoints]{
	Resource:   served("endpoints"),
	Default:    defaults.Endpoints,
	Validation: validation.Endpoints,
	Table:      tables.Endpoints,
})

var _ = register(Kind[*discoveryv1.EndpointSlice]{
	Resource:   served("endpointslices"),
	Validation: validation.EndpointSlice,
	Table:      tables.EndpointSlice,
})

var _ = register(Kind[*networkingv1.Ingress]{
	Resource:   served("ingresses"),
	Admit:      admitDefaultIngressClass,
	Validation: validation.Ingress,
	Table:      tables.Ingress,
})
