package tables

import (
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Roles and ClusterRoles have no printer of their own in Kubernetes either: kubectl shows
// their name and creation time, as the default Printer does.

// RoleBinding is how kubectl get shows RoleBindings.
var RoleBinding = NewPrinter(bindingColumns(rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"], "roleBinding"),
	func(rb *rbacv1.RoleBinding, now time.Time) metav1.TableRow {
		return bindingRow(rb.Name, rb.RoleRef, rb.Subjects, rb.CreationTimestamp, now)
	})

// ClusterRoleBinding is how kubectl get shows ClusterRoleBindings.
var ClusterRoleBinding = NewPrinter(bindingColumns(rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"], "clusterRoleBinding"),
	func(crb *rbacv1.ClusterRoleBinding, now time.Time) metav1.TableRow {
		return bindingRow(crb.Name, crb.RoleRef, crb.Subjects, crb.CreationTimestamp, now)
	})

// bindingColumns: the role granted and the age, then, with -o wide, who it is granted to.
func bindingColumns(roleRefDoc, kind string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Role", Type: "string", Description: roleRefDoc},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + kind},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + kind},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + kind},
	}
}

func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time, now time.Time) metav1.TableRow {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return metav1.TableRow{Cells: []any{
		name, fmt.Sprintf("%s/%s", ref.Kind, ref.Name), age(created, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "),
	}}
}
