package rbac

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/shared/apierror"
)

func escalationPolicy() policy {
	return policy{
		roles: []*rbacv1.Role{role("ns1", "pod-admin", rule("*", "", "pods", ""))},
		clusterRoles: []*rbacv1.ClusterRole{
			clusterRole("view", rule("get,list,watch", "", "pods,services", "")),
			clusterRole("edit", rule("get,list,watch,create,update,delete", "", "pods,services,secrets", "")),
			clusterRole("role-writer", rule("create,update", "rbac.authorization.k8s.io", "roles,rolebindings", "")),
			clusterRole("escalator", rule("escalate", "rbac.authorization.k8s.io", "roles", "")),
			clusterRole("edit-binder", rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"edit"}}),
		},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterRoleBinding("view", "view", "Group:viewers"),
			clusterRoleBinding("writers", "role-writer", "Group:viewers"),
		},
		roleBindings: []*rbacv1.RoleBinding{
			roleBinding("ns1", "escalate", "ClusterRole", "escalator", "User:escalator"),
			roleBinding("ns1", "bind-edit", "ClusterRole", "edit-binder", "User:binder"),
			roleBinding("ns1", "pod-admin", "Role", "pod-admin", "User:podadmin"),
		},
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	cases := []struct {
		name      string
		user      authorizer.User
		rules     []rbacv1.PolicyRule
		namespace string
		want      string
	}{
		{
			name:      "rules held",
			user:      user("jane", "viewers"),
			rules:     []rbacv1.PolicyRule{rule("get,list", "", "pods", "")},
			namespace: "ns1",
		},
		{
			name:      "rules held through a star",
			user:      user("podadmin", "viewers"),
			rules:     []rbacv1.PolicyRule{rule("delete,deletecollection,create", "", "pods", "")},
			namespace: "ns1",
		},
		{
			name:      "a namespace's rules do not cover the cluster",
			user:      user("podadmin"),
			rules:     []rbacv1.PolicyRule{rule("delete", "", "pods", "")},
			namespace: "",
			want:      "user \"podadmin\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}",
		},
		{
			name:      "missing rules listed, compacted by resource and sorted",
			user:      user("jane", "viewers", "system:authenticated"),
			rules:     []rbacv1.PolicyRule{rule("get,create,delete", "", "pods,secrets", ""), rule("get", "", "", "/metrics")},
			namespace: "ns1",
			want: "user \"jane\" (groups=[\"viewers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n" +
				"{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"create\" \"delete\"]}\n" +
				"{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"create\" \"delete\"]}\n" +
				"{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}",
		},
		{
			name:      "resource names",
			user:      user("jane", "viewers"),
			rules:     []rbacv1.PolicyRule{{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{"web"}}},
			namespace: "ns1",
			want:      "user \"jane\" (groups=[\"viewers\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"services\"], ResourceNames:[\"web\"], Verbs:[\"update\"]}",
		},
	}
	r := escalationPolicy().authorizer().Resolver()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := r.ConfirmNoEscalation(t.Context(), tc.user, tc.rules, tc.namespace)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfirmNoEscalationNamesResolutionErrors(t *testing.T) {
	p := policy{clusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterRoleBinding("dangling", "gone", "User:jane")}}
	err := p.authorizer().Resolver().ConfirmNoEscalation(t.Context(), user("jane"), []rbacv1.PolicyRule{rule("get", "", "pods", "")}, "")
	want := "user \"jane\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}" +
		"; resolution errors: [clusterrole.rbac.authorization.k8s.io \"gone\" not found]"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestCheckRoleWrite(t *testing.T) {
	a := escalationPolicy().authorizer()
	request := func(u authorizer.User, resource, ns string) authorizer.Attributes {
		return authorizer.Attributes{User: u, Verb: "create", ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1", Namespace: ns, Resource: resource}
	}
	secrets := []rbacv1.PolicyRule{rule("get", "", "secrets", "")}
	cases := []struct {
		name    string
		request authorizer.Attributes
		rules   []rbacv1.PolicyRule
		want    string
	}{
		{name: "held", request: request(user("jane", "viewers"), "roles", "ns1"), rules: []rbacv1.PolicyRule{rule("get", "", "pods", "")}},
		{name: "system:masters", request: request(user("root", "system:masters"), "clusterroles", ""), rules: secrets},
		{name: "escalate allowed in the namespace", request: request(user("escalator"), "roles", "ns1"), rules: secrets},
		{name: "escalate is for roles of that namespace only", request: request(user("escalator"), "roles", "ns2"), rules: secrets,
			want: "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"escalator\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
		{name: "not held", request: request(user("jane", "viewers"), "clusterroles", ""), rules: secrets,
			want: "clusterroles.rbac.authorization.k8s.io \"r\" is forbidden: user \"jane\" (groups=[\"viewers\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Resolver().CheckRoleWrite(t.Context(), a, tc.request, "r", tc.rules)
			checkForbidden(t, err, tc.want)
		})
	}
}

func TestCheckBindingWrite(t *testing.T) {
	a := escalationPolicy().authorizer()
	request := func(u authorizer.User, resource, ns string) authorizer.Attributes {
		return authorizer.Attributes{User: u, Verb: "create", ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1", Namespace: ns, Resource: resource}
	}
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	cases := []struct {
		name    string
		request authorizer.Attributes
		ref     rbacv1.RoleRef
		want    string
	}{
		{name: "role held", request: request(user("jane", "viewers"), "rolebindings", "ns1"), ref: ref("ClusterRole", "view")},
		{name: "system:masters binds a missing role", request: request(user("root", "system:masters"), "clusterrolebindings", ""), ref: ref("ClusterRole", "gone")},
		{name: "bind allowed on that role", request: request(user("binder"), "rolebindings", "ns1"), ref: ref("ClusterRole", "edit")},
		{name: "bind is for that role only", request: request(user("binder"), "rolebindings", "ns1"), ref: ref("ClusterRole", "view"),
			want: "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"binder\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n" +
				"{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\" \"watch\"]}\n{APIGroups:[\"\"], Resources:[\"services\"], Verbs:[\"get\" \"list\" \"watch\"]}"},
		{name: "bind is for that namespace only", request: request(user("binder"), "rolebindings", "ns2"), ref: ref("ClusterRole", "edit"),
			want: "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"binder\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n" +
				"{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\" \"watch\" \"create\" \"update\" \"delete\"]}\n" +
				"{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"watch\" \"create\" \"update\" \"delete\"]}\n" +
				"{APIGroups:[\"\"], Resources:[\"services\"], Verbs:[\"get\" \"list\" \"watch\" \"create\" \"update\" \"delete\"]}"},
		{name: "a missing role cannot be checked", request: request(user("jane", "viewers"), "rolebindings", "ns1"), ref: ref("Role", "gone"),
			want: "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: role.rbac.authorization.k8s.io \"gone\" not found"},
		{name: "a namespace's role", request: request(user("podadmin"), "rolebindings", "ns1"), ref: ref("Role", "pod-admin")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Resolver().CheckBindingWrite(t.Context(), a, tc.request, "b", tc.ref)
			checkForbidden(t, err, tc.want)
		})
	}
}

func checkForbidden(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !errors.Is(err, apierror.ErrForbidden) {
		t.Fatalf("error %v is not Forbidden", err)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestCompactRules(t *testing.T) {
	named := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}
	in := []rbacv1.PolicyRule{
		rule("get", "", "pods", ""),
		rule("list", "", "pods", ""),
		named,
		rule("get", "apps", "deployments", ""),
		rule("get", "", "pods,services", ""),
		rule("watch", "", "pods", ""),
	}
	want := []rbacv1.PolicyRule{
		rule("get,list,watch", "", "pods", ""),
		named,
		rule("get", "apps", "deployments", ""),
		rule("get", "", "pods,services", ""),
	}
	if diff := cmp.Diff(want, CompactRules(in)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"get"}, in[0].Verbs); diff != "" {
		t.Errorf("CompactRules changed its input (-want +got):\n%s", diff)
	}
}
