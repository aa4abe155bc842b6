package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"

	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

var _ = register(Kind[*coordinationv1.Lease]{
	Resource:   served("leases"),
	Validation: validation.Lease,
	Table:      tables.Lease,
})
