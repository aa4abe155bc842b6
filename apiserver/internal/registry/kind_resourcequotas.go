package registry

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds that bound a namespace's use of resources, enforced at admission (quota.go).

// ResourceQuotas start without status: the resourcequota controller measures their usage,
// which admission then raises as it admits writes.
var _ = register(Kind[*corev1.ResourceQuota]{
	Resource:   served("resourcequotas"),
	Validation: validation.ResourceQuota,
	Table:      tables.ResourceQuota,
})

// LimitRanges show the default table (NAME CREATED AT), as in Kubernetes.
var _ = register(Kind[*corev1.LimitRange]{
	Resource:   served("limitranges"),
	Default:    defaults.LimitRange,
	Validation: validation.LimitRange,
})
