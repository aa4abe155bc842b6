package rbac

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

// BenchmarkAuthorize1000Bindings measures decisions against 500 ClusterRoleBindings and 500
// RoleBindings (50 in the request's namespace), for a request allowed by the last binding
// looked at and for one refused after looking at all of them.
func BenchmarkAuthorize1000Bindings(b *testing.B) {
	const namespaces, perNamespace = 10, 50
	var (
		clusterRoles []*rbacv1.ClusterRole
		crbs         []*rbacv1.ClusterRoleBinding
		roles        []*rbacv1.Role
		rbs          []*rbacv1.RoleBinding
	)
	for i := range 500 {
		name := fmt.Sprintf("cr-%d", i)
		clusterRoles = append(clusterRoles, clusterRole(name, rule("get,list,watch", "apps", fmt.Sprintf("r%d", i), ""), rule("get", "", "", fmt.Sprintf("/p%d/*", i))))
		crbs = append(crbs, clusterRoleBinding(name, name, fmt.Sprintf("User:user-%d", i), fmt.Sprintf("Group:group-%d", i), "ServiceAccount:ns-0:sa-"+fmt.Sprint(i)))
	}
	for n := range namespaces {
		ns := fmt.Sprintf("ns-%d", n)
		for i := range perNamespace {
			name := fmt.Sprintf("role-%d", i)
			roles = append(roles, role(ns, name, rule("get,list", "", fmt.Sprintf("r%d", i), "")))
			rbs = append(rbs, roleBinding(ns, name, "Role", name, fmt.Sprintf("User:user-%d", i), fmt.Sprintf("ServiceAccount::sa-%d", i)))
		}
	}
	a := NewStatic(roles, rbs, clusterRoles, crbs).NewAuthorizer()
	sa := authorizer.User{Name: "system:serviceaccount:ns-3:sa-49", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns-3", "system:authenticated"}}
	cases := []struct {
		name  string
		attrs authorizer.Attributes
		want  authorizer.Decision
	}{
		{"allowed", authorizer.Attributes{User: sa, Verb: "get", ResourceRequest: true, APIVersion: "v1", Namespace: "ns-3", Resource: "r49", Name: "x"}, authorizer.Allow},
		{"refused", authorizer.Attributes{User: sa, Verb: "delete", ResourceRequest: true, APIVersion: "v1", Namespace: "ns-3", Resource: "r49", Name: "x"}, authorizer.NoOpinion},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := a.Authorize(ctx, tc.attrs); d != tc.want {
					b.Fatalf("decision %v, want %v", d, tc.want)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
