package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRBACCells(t *testing.T) {
	subjects := []rbacv1.Subject{
		{Kind: "User", Name: "jane"}, {Kind: "ServiceAccount", Namespace: "monitoring", Name: "ksm"},
		{Kind: "Group", Name: "devs"}, {Kind: "User", Name: "bob"}, {Kind: "ServiceAccount", Namespace: "dev", Name: "default"},
	}
	created := ago(26 * time.Hour)
	cases := []struct {
		name    string
		printer Printer
		obj     runtime.Object
		want    []any
	}{
		{"role", defaultPrinter, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "dev", CreationTimestamp: created}},
			[]any{"pod-reader", "2025-02-28T10:00:00Z"}},
		{"cluster role", defaultPrinter, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: created}},
			[]any{"view", "2025-02-28T10:00:00Z"}},
		{"role binding", RoleBinding, &rbacv1.RoleBinding{ObjectMeta: objMeta("read-pods"),
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"}, Subjects: subjects},
			[]any{"read-pods", "Role/pod-reader", "3h", "jane, bob", "devs", "monitoring/ksm, dev/default"}},
		{"role binding without subjects", RoleBinding, &rbacv1.RoleBinding{ObjectMeta: objMeta("empty"),
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}},
			[]any{"empty", "ClusterRole/edit", "3h", "", "", ""}},
		{"cluster role binding", ClusterRoleBinding, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ksm", CreationTimestamp: created},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: subjects[1:3]},
			[]any{"ksm", "ClusterRole/view", "26h", "", "devs", "monitoring/ksm"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := tc.printer.Table(tc.obj, Options{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if diff := cmp.Diff(tc.want, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

// kubectl get shows NAME, ROLE and AGE of bindings, and USERS, GROUPS and SERVICEACCOUNTS
// with -o wide; of roles, NAME and CREATED AT.
func TestRBACColumnsMatchKubernetes(t *testing.T) {
	cases := []struct {
		name string
		cols []metav1.TableColumnDefinition
		want []string
	}{
		{"roles", defaultPrinter.Columns, []string{"Name/string/0", "Created At/date/0"}},
		{"role bindings", RoleBinding.Columns, []string{"Name/string/0", "Role/string/0", "Age/string/0",
			"Users/string/1", "Groups/string/1", "ServiceAccounts/string/1"}},
		{"cluster role bindings", ClusterRoleBinding.Columns, []string{"Name/string/0", "Role/string/0", "Age/string/0",
			"Users/string/1", "Groups/string/1", "ServiceAccounts/string/1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range tc.cols {
				got = append(got, c.Name+"/"+c.Type+"/"+string(rune('0'+c.Priority)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
		})
	}
}
