package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds of rbac.authorization.k8s.io: what may be done, and to whom it is granted. Roles
// show the default table, as in Kubernetes.

var _ = register(Kind[*rbacv1.Role]{
	Resource:   served("roles"),
	Validation: validation.Role,
})

var _ = register(Kind[*rbacv1.ClusterRole]{
	Resource:   served("clusterroles"),
	Validation: validation.ClusterRole,
})

var _ = register(Kind[*rbacv1.RoleBinding]{
	Resource:   served("rolebindings"),
	Default:    defaults.RoleBinding,
	Validation: validation.RoleBinding,
	Table:      tables.RoleBinding,
})

var _ = register(Kind[*rbacv1.ClusterRoleBinding]{
	Resource:   served("clusterrolebindings"),
	Default:    defaults.ClusterRoleBinding,
	Validation: validation.ClusterRoleBinding,
	Table:      tables.ClusterRoleBinding,
})
