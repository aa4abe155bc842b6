package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// split turns "a,b" into its parts, and "" into none.
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// rule builds a rule from comma-separated lists; a resource rule's empty group list is
// the core group "".
func rule(verbs, groups, resources, urls string) rbacv1.PolicyRule {
	r := rbacv1.PolicyRule{Verbs: split(verbs), Resources: split(resources), NonResourceURLs: split(urls)}
	if resources != "" {
		r.APIGroups = strings.Split(groups, ",")
	}
	return r
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

// subjects reads "User:jane", "Group:dev", "ServiceAccount:ns:name" or "ServiceAccount::name".
func subjects(specs ...string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, spec := range specs {
		parts := strings.SplitN(spec, ":", 3)
		s := rbacv1.Subject{Kind: parts[0]}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			s.Namespace, s.Name = parts[1], parts[2]
		default:
			s.APIGroup, s.Name = rbacv1.GroupName, strings.Join(parts[1:], ":")
		}
		out = append(out, s)
	}
	return out
}

func clusterRoleBinding(name, roleName string, subs ...string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects(subs...),
	}
}

func roleBinding(ns, name, kind, roleName string, subs ...string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName},
		Subjects:   subjects(subs...),
	}
}
