package defaults

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// RoleBinding defaults a RoleBinding: the roleRef's group, which can only be RBAC's, and each
// subject's group.
func RoleBinding(rb *rbacv1.RoleBinding) {
	roleRef(&rb.RoleRef)
	subjects(rb.Subjects)
}

// ClusterRoleBinding defaults a ClusterRoleBinding as RoleBinding does.
func ClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) {
	roleRef(&crb.RoleRef)
	subjects(crb.Subjects)
}

func roleRef(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
}

// subjects fills the group of Users and Groups, which live in RBAC's group; a ServiceAccount is
// a core kind, whose group is "". An unknown kind is left for validation to name.
func subjects(ss []rbacv1.Subject) {
	for i := range ss {
		s := &ss[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}
