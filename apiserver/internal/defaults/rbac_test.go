package defaults

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestBindings(t *testing.T) {
	in := func() []rbacv1.Subject {
		return []rbacv1.Subject{
			{Kind: "User", Name: "jane"},
			{Kind: "Group", Name: "devs"},
			{Kind: "ServiceAccount", Name: "default", Namespace: "ns"},
			{Kind: "User", Name: "bob", APIGroup: "example.com"},
			{Kind: "Robot", Name: "r2"},
		}
	}
	out := []rbacv1.Subject{
		{Kind: "User", Name: "jane", APIGroup: "rbac.authorization.k8s.io"},
		{Kind: "Group", Name: "devs", APIGroup: "rbac.authorization.k8s.io"},
		{Kind: "ServiceAccount", Name: "default", Namespace: "ns"},
		{Kind: "User", Name: "bob", APIGroup: "example.com"},
		{Kind: "Robot", Name: "r2"},
	}
	run(t, RoleBinding, []defaultCase[*rbacv1.RoleBinding]{
		{"role binding",
			&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: in()},
			&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "r"}, Subjects: out}},
		{"another roleRef group is kept for validation",
			&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"}},
			&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"}}},
	})
	run(t, ClusterRoleBinding, []defaultCase[*rbacv1.ClusterRoleBinding]{
		{"cluster role binding",
			&rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: in()},
			&rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"}, Subjects: out}},
	})
}
