package rbac

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

func user(name string, groups ...string) authorizer.User {
	return authorizer.User{Name: name, Groups: groups}
}

func in(u authorizer.User, a authorizer.Attributes, ns string) authorizer.Attributes {
	a.User, a.Namespace = u, ns
	return a
}

type policy struct {
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

func (p policy) authorizer() *Authorizer {
	return NewStatic(p.roles, p.roleBindings, p.clusterRoles, p.clusterRoleBindings).NewAuthorizer()
}

// The policies follow Kubernetes' TestAuthorizer.
func TestAuthorize(t *testing.T) {
	cases := []struct {
		name     string
		policy   policy
		allow    []authorizer.Attributes
		refuse   []authorizer.Attributes
		noreason bool
	}{
		{
			name: "a RoleBinding to a ClusterRole applies in its namespace only",
			policy: policy{
				clusterRoles: []*rbacv1.ClusterRole{clusterRole("admin", rule("*", "*", "*", "*"))},
				roleBindings: []*rbacv1.RoleBinding{roleBinding("ns1", "admin", "ClusterRole", "admin", "User:admin", "Group:admins")},
			},
			allow: []authorizer.Attributes{
				in(user("admin"), res("get", "", "pods", "", ""), "ns1"),
				in(user("admin"), res("watch", "", "pods", "", ""), "ns1"),
				in(user("admin", "group1"), res("watch", "", "foobar", "", ""), "ns1"),
				in(user("joe", "admins"), res("watch", "", "foobar", "", ""), "ns1"),
				in(user("joe", "group1", "admins"), res("watch", "", "foobar", "", ""), "ns1"),
			},
			refuse: []authorizer.Attributes{
				in(user("admin"), res("get", "", "pods", "", ""), "ns2"),
				in(user("admin"), res("get", "", "nodes", "", ""), ""),
				in(user("admin", "admins"), res("get", "", "pods", "", ""), "ns2"),
				in(user("admin", "admins"), res("get", "", "nodes", "", ""), ""),
				// Its non-resource rule grants nothing through a RoleBinding.
				in(user("admin"), nonRes("get", "/healthz"), ""),
			},
		},
		{
			name: "non-resource urls",
			policy: policy{
				clusterRoles: []*rbacv1.ClusterRole{
					clusterRole("non-resource-url-getter", rule("get", "", "", "/apis")),
					clusterRole("non-resource-url", rule("*", "", "", "/apis")),
					clusterRole("non-resource-url-prefix", rule("get", "", "", "/apis/*")),
				},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
					clusterRoleBinding("non-resource-url-getter", "non-resource-url-getter", "User:foo", "Group:bar"),
					clusterRoleBinding("non-resource-url", "non-resource-url", "User:admin", "Group:admin"),
					clusterRoleBinding("non-resource-url-prefix", "non-resource-url-prefix", "User:prefixed", "Group:prefixed"),
				},
			},
			allow: []authorizer.Attributes{
				in(user("foo"), nonRes("get", "/apis"), ""),
				in(user("", "bar"), nonRes("get", "/apis"), ""),
				in(user("admin"), nonRes("get", "/apis"), ""),
				in(user("", "admin"), nonRes("watch", "/apis"), ""),
				in(user("prefixed"), nonRes("get", "/apis/v1"), ""),
				in(user("", "prefixed"), nonRes("get", "/apis/v1/foobar"), ""),
			},
			refuse: []authorizer.Attributes{
				in(user("foo"), nonRes("watch", "/apis"), ""),
				in(user("", "bar"), nonRes("watch", "/apis"), ""),
				in(user("foo"), nonRes("get", "/apis/v1"), ""),
				in(user("admin"), nonRes("get", "/apis/v1"), ""),
				// A prefix only works with its *.
				in(user("prefixed"), nonRes("get", "/apis"), ""),
			},
		},
		{
			name: "a resource rule does not grant its subresources",
			policy: policy{
				clusterRoles: []*rbacv1.ClusterRole{clusterRole("admin", rule("*", "*", "pods", ""))},
				roleBindings: []*rbacv1.RoleBinding{roleBinding("ns1", "admin", "ClusterRole", "admin", "User:admin")},
			},
			allow:  []authorizer.Attributes{in(user("admin"), res("get", "", "pods", "", ""), "ns1")},
			refuse: []authorizer.Attributes{in(user("admin"), res("get", "", "pods", "status", "p"), "ns1")},
		},
		{
			name: "subresource rules",
			policy: policy{
				clusterRoles: []*rbacv1.ClusterRole{clusterRole("admin", rule("*", "*", "pods/status", ""), rule("*", "*", "*/scale", ""))},
				roleBindings: []*rbacv1.RoleBinding{roleBinding("ns1", "admin", "ClusterRole", "admin", "User:admin")},
			},
			allow: []authorizer.Attributes{
				in(user("admin"), res("get", "", "pods", "status", "p"), "ns1"),
				in(user("admin"), res("get", "", "pods", "scale", "p"), "ns1"),
				in(user("admin"), res("get", "apps", "deployments", "scale", "d"), "ns1"),
				in(user("admin"), res("get", "", "anything", "scale", "x"), "ns1"),
			},
			refuse: []authorizer.Attributes{in(user("admin"), res("get", "", "pods", "", "p"), "ns1")},
		},
		{
			name: "service accounts, named or defaulted to the binding's namespace, and their groups",
			policy: policy{
				roles: []*rbacv1.Role{role("ns1", "pod-reader", rule("get,list", "", "pods", ""))},
				roleBindings: []*rbacv1.RoleBinding{
					roleBinding("ns1", "local", "Role", "pod-reader", "ServiceAccount::builder"),
					roleBinding("ns1", "remote", "Role", "pod-reader", "ServiceAccount:ns2:deployer"),
					roleBinding("ns1", "all-of-ns3", "Role", "pod-reader", "Group:system:serviceaccounts:ns3"),
				},
			},
			allow: []authorizer.Attributes{
				in(user("system:serviceaccount:ns1:builder"), res("list", "", "pods", "", ""), "ns1"),
				in(user("system:serviceaccount:ns2:deployer"), res("get", "", "pods", "", "p"), "ns1"),
				in(user("system:serviceaccount:ns3:anyone", "system:serviceaccounts", "system:serviceaccounts:ns3"), res("get", "", "pods", "", "p"), "ns1"),
			},
			refuse: []authorizer.Attributes{
				in(user("system:serviceaccount:ns2:builder"), res("list", "", "pods", "", ""), "ns1"),
				in(user("system:serviceaccount:ns1:deployer"), res("list", "", "pods", "", ""), "ns1"),
				in(user("builder"), res("list", "", "pods", "", ""), "ns1"),
				in(user("system:serviceaccount:ns1:builder"), res("delete", "", "pods", "", "p"), "ns1"),
				in(user("system:serviceaccount:ns1:builder"), res("list", "", "pods", "", ""), "ns2"),
			},
		},
		{
			name: "a ClusterRoleBinding's service account needs a namespace",
			policy: policy{
				clusterRoles:        []*rbacv1.ClusterRole{clusterRole("view", rule("get", "", "pods", ""))},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterRoleBinding("view", "view", "ServiceAccount::builder")},
			},
			refuse: []authorizer.Attributes{in(user("system:serviceaccount::builder"), res("get", "", "pods", "", "p"), "ns1")},
		},
		{
			name: "resourceNames never allow create or list",
			policy: policy{
				clusterRoles:        []*rbacv1.ClusterRole{clusterRole("one", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}})},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterRoleBinding("one", "one", "User:jane")},
			},
			allow: []authorizer.Attributes{
				in(user("jane"), res("get", "", "configmaps", "", "cfg"), "ns1"),
				in(user("jane"), res("update", "", "configmaps", "", "cfg"), "ns1"),
				// A list narrowed to the name by metadata.name is a read of that object.
				in(user("jane"), res("watch", "", "configmaps", "", "cfg"), "ns1"),
			},
			refuse: []authorizer.Attributes{
				in(user("jane"), res("create", "", "configmaps", "", ""), "ns1"),
				in(user("jane"), res("list", "", "configmaps", "", ""), "ns1"),
				in(user("jane"), res("get", "", "configmaps", "", "other"), "ns1"),
			},
		},
		{
			name: "a binding to a missing role grants nothing and the others still apply",
			policy: policy{
				clusterRoles: []*rbacv1.ClusterRole{clusterRole("view", rule("get", "", "pods", ""))},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
					clusterRoleBinding("dangling", "missing", "User:jane"),
					clusterRoleBinding("view", "view", "User:jane"),
				},
				roleBindings: []*rbacv1.RoleBinding{roleBinding("ns1", "dangling", "Role", "missing", "User:jane")},
			},
			allow:  []authorizer.Attributes{in(user("jane"), res("get", "", "pods", "", "p"), "ns1")},
			refuse: []authorizer.Attributes{in(user("jane"), res("delete", "", "pods", "", "p"), "ns1")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.policy.authorizer()
			for _, attrs := range tc.allow {
				if d, reason, err := a.Authorize(t.Context(), attrs); d != authorizer.Allow || err != nil {
					t.Errorf("refused %+v: %v %q %v", attrs, d, reason, err)
				}
			}
			for _, attrs := range tc.refuse {
				if d, reason, err := a.Authorize(t.Context(), attrs); d != authorizer.NoOpinion || err != nil {
					t.Errorf("allowed %+v: %v %q %v", attrs, d, reason, err)
				}
			}
		})
	}
}

func TestAuthorizeReasons(t *testing.T) {
	p := policy{
		roles:        []*rbacv1.Role{role("ns1", "pod-reader", rule("get", "", "pods", ""))},
		clusterRoles: []*rbacv1.ClusterRole{clusterRole("view", rule("list", "", "pods", ""))},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterRoleBinding("viewers", "view", "Group:dev"),
			clusterRoleBinding("dangling", "gone", "User:jane"),
		},
		roleBindings: []*rbacv1.RoleBinding{
			roleBinding("ns1", "readers", "Role", "pod-reader", "User:bob", "ServiceAccount::builder"),
			roleBinding("ns1", "dangling", "Role", "gone", "User:jane"),
		},
	}
	cases := []struct {
		name   string
		attrs  authorizer.Attributes
		want   authorizer.Decision
		reason string
	}{
		{"cluster role binding to a group", in(user("jane", "dev"), res("list", "", "pods", "", ""), "ns1"), authorizer.Allow,
			`RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "dev"`},
		{"role binding to a service account of its namespace", in(user("system:serviceaccount:ns1:builder"), res("get", "", "pods", "", "p"), "ns1"), authorizer.Allow,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to ServiceAccount "builder/ns1"`},
		{"role binding to a user", in(user("bob"), res("get", "", "pods", "", "p"), "ns1"), authorizer.Allow,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to User "bob"`},
		{"nothing applies", in(user("bob"), res("delete", "", "pods", "", "p"), "ns1"), authorizer.NoOpinion, ""},
		{"missing roles are listed", in(user("jane"), res("delete", "", "pods", "", "p"), "ns1"), authorizer.NoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "gone" not found]`},
		{"one missing role", in(user("jane"), res("delete", "", "nodes", "", "n"), ""), authorizer.NoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
	}
	a := p.authorizer()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(t.Context(), tc.attrs)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	p := policy{
		roles:        []*rbacv1.Role{role("ns1", "pod-reader", rule("get,list", "", "pods", ""))},
		clusterRoles: []*rbacv1.ClusterRole{clusterRole("basic", rule("create", "authorization.k8s.io", "selfsubjectaccessreviews", ""), rule("get", "", "", "/healthz,/version"))},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterRoleBinding("basic", "basic", "Group:system:authenticated"),
		},
		roleBindings: []*rbacv1.RoleBinding{
			roleBinding("ns1", "readers", "Role", "pod-reader", "ServiceAccount::builder"),
			roleBinding("ns1", "dangling", "Role", "gone", "ServiceAccount::builder"),
		},
	}
	sa := user("system:serviceaccount:ns1:builder", "system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated")
	cases := []struct {
		name        string
		namespace   string
		resource    []authorizationv1.ResourceRule
		nonResource []authorizationv1.NonResourceRule
		err         string
	}{
		{
			name:      "in the namespace",
			namespace: "ns1",
			resource: []authorizationv1.ResourceRule{
				{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}},
				{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			},
			nonResource: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/version"}}},
			err:         `role.rbac.authorization.k8s.io "gone" not found`,
		},
		{
			name:      "elsewhere",
			namespace: "ns2",
			resource: []authorizationv1.ResourceRule{
				{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}},
			},
			nonResource: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/version"}}},
		},
	}
	a := p.authorizer()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource, nonResource, incomplete, err := a.RulesFor(t.Context(), sa, tc.namespace)
			if incomplete {
				t.Error("RBAC said its rules were incomplete")
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.err {
				t.Errorf("error %q, want %q", gotErr, tc.err)
			}
			if diff := cmp.Diff(tc.resource, resource); diff != "" {
				t.Errorf("resource rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.nonResource, nonResource); diff != "" {
				t.Errorf("non-resource rules (-want +got):\n%s", diff)
			}
		})
	}
}
