package rbac

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

func TestBindingIndexLookup(t *testing.T) {
	crbs := []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding("c0", "r", "User:jane"),
		clusterRoleBinding("c1", "r", "Group:dev", "User:jane"), // jane twice: listed once
		clusterRoleBinding("c2", "r", "ServiceAccount:ns1:sa"),
		clusterRoleBinding("c3", "r", "User:system:serviceaccount:ns1:sa"),
		clusterRoleBinding("c4", "r", "ServiceAccount::sa"), // no namespace: names nobody
		clusterRoleBinding("c5", "r", "Group:system:serviceaccounts:ns1"),
		clusterRoleBinding("c6", "r", "User:bob"),
	}
	rbs := []*rbacv1.RoleBinding{
		roleBinding("ns1", "b0", "Role", "r", "ServiceAccount::sa"), // the binding's namespace
		roleBinding("ns1", "b1", "Role", "r", "ServiceAccount:ns2:sa"),
		roleBinding("ns1", "b2", "Role", "r", "User:jane", "Group:dev"),
		roleBinding("ns2", "b3", "Role", "r", "ServiceAccount::sa"),
	}
	x := NewBindingIndex(crbs, rbs)
	sa := authorizer.User{Name: "system:serviceaccount:ns1:sa", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}}
	jane := authorizer.User{Name: "jane", Groups: []string{"dev", "dev"}}
	tests := []struct {
		name        string
		user        authorizer.User
		namespace   string
		wantCluster []string
		wantNS      []string
	}{
		{"user and group, in list order, once each", jane, "ns1", []string{"c0", "c1"}, []string{"b2"}},
		{"service account by kind, user name and group", sa, "ns1", []string{"c2", "c3", "c5"}, []string{"b0"}},
		{"service account of another namespace", authorizer.User{Name: "system:serviceaccount:ns2:sa"}, "ns1", nil, []string{"b1"}},
		{"namespace without bindings", jane, "ns3", []string{"c0", "c1"}, nil},
		{"nobody named", authorizer.User{Name: "eve", Groups: []string{"system:authenticated"}}, "ns1", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := x.ClusterRoleBindingsFor(tc.user)
			n, _ := x.RoleBindingsFor(tc.user, tc.namespace)
			if got := names(c); !slices.Equal(got, tc.wantCluster) {
				t.Errorf("cluster bindings %v, want %v", got, tc.wantCluster)
			}
			if got := names(n); !slices.Equal(got, tc.wantNS) {
				t.Errorf("role bindings %v, want %v", got, tc.wantNS)
			}
		})
	}
}

// TestBindingIndexMatchesWalk compares the index with a walk over every binding using the
// subject matching that decisions use, on random policies.
func TestBindingIndexMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, rng.IntN(n)) }
	subject := func() string {
		switch rng.IntN(5) {
		case 0:
			return "User:" + pick("u", 6)
		case 1:
			return "Group:" + pick("g", 6)
		case 2:
			return "ServiceAccount:" + pick("ns", 3) + ":" + pick("sa", 3)
		case 3:
			return "ServiceAccount::" + pick("sa", 3)
		default:
			return "User:system:serviceaccount:" + pick("ns", 3) + ":" + pick("sa", 3)
		}
	}
	for round := range 50 {
		var (
			crbs []*rbacv1.ClusterRoleBinding
			rbs  []*rbacv1.RoleBinding
		)
		for i := range 40 {
			subs := make([]string, 1+rng.IntN(3))
			for j := range subs {
				subs[j] = subject()
			}
			if rng.IntN(2) == 0 {
				crbs = append(crbs, clusterRoleBinding(fmt.Sprint("c", i), "r", subs...))
			} else {
				rbs = append(rbs, roleBinding(pick("ns", 3), fmt.Sprint("b", i), "Role", "r", subs...))
			}
		}
		x := NewBindingIndex(crbs, rbs)
		for range 30 {
			u := authorizer.User{Name: pick("u", 6), Groups: []string{pick("g", 6), pick("g", 6)}}
			if rng.IntN(2) == 0 {
				u.Name = "system:serviceaccount:" + pick("ns", 3) + ":" + pick("sa", 3)
			}
			ns := pick("ns", 3)
			var wantC, wantN []string
			for _, b := range crbs {
				if _, ok := appliesTo(u, b.Subjects, ""); ok {
					wantC = append(wantC, b.Name)
				}
			}
			for _, b := range rbs {
				if _, ok := appliesTo(u, b.Subjects, ns); ok && b.Namespace == ns {
					wantN = append(wantN, b.Name)
				}
			}
			c, _ := x.ClusterRoleBindingsFor(u)
			n, _ := x.RoleBindingsFor(u, ns)
			if got := names(c); !slices.Equal(got, wantC) {
				t.Fatalf("round %d, %+v: cluster bindings %v, want %v", round, u, got, wantC)
			}
			if got := names(n); !slices.Equal(got, wantN) {
				t.Fatalf("round %d, %+v in %s: role bindings %v, want %v", round, u, ns, got, wantN)
			}
		}
	}
}

func names[T interface{ GetName() string }](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}
