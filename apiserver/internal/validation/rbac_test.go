package validation

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/defaults"
)

func podReader() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
}

func TestRole(t *testing.T) {
	good := func() *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: meta("pod-reader"), Rules: []rbacv1.PolicyRule{podReader()}}
	}
	runCreate(t, Role, nil, good, []createCase[*rbacv1.Role]{
		{name: "valid"},
		{name: "no rules", mutate: func(r *rbacv1.Role) { r.Rules = nil }},
		{name: "name may hold a colon", mutate: func(r *rbacv1.Role) { r.Name = "system:pod-reader" }},
		{name: "name may not hold a slash", mutate: func(r *rbacv1.Role) { r.Name = "a/b" }, want: []problem{inv("metadata.name")}},
		{name: "name may not be ..", mutate: func(r *rbacv1.Role) { r.Name = ".." }, want: []problem{inv("metadata.name")}},
		{name: "verbs required", mutate: func(r *rbacv1.Role) { r.Rules[0].Verbs = nil }, want: []problem{req("rules[0].verbs")}},
		{name: "api groups and resources required", mutate: func(r *rbacv1.Role) {
			r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}})
		}, want: []problem{req("rules[1].apiGroups"), req("rules[1].resources")}},
		{name: "resource names on several resources", mutate: func(r *rbacv1.Role) {
			r.Rules[0].Resources = []string{"pods", "secrets"}
			r.Rules[0].ResourceNames = []string{"a"}
		}},
		{name: "no non-resource URLs in a namespace", mutate: func(r *rbacv1.Role) {
			r.Rules[0] = rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}
		}, want: []problem{inv("rules[0].nonResourceURLs")}},
		{name: "non-resource URLs with resources too", mutate: func(r *rbacv1.Role) {
			r.Rules[0].NonResourceURLs = []string{"/healthz"}
		}, want: []problem{inv("rules[0].nonResourceURLs"), inv("rules[0].nonResourceURLs")}},
	})
	runUpdate(t, Role, nil, good, []updateCase[*rbacv1.Role]{
		{name: "rules may change", mutate: func(r *rbacv1.Role) { r.Rules[0].Verbs = []string{"*"} }},
		{name: "updated rules are checked", mutate: func(r *rbacv1.Role) { r.Rules[0].Resources = nil }, want: []problem{req("rules[0].resources")}},
	})
}

func TestClusterRole(t *testing.T) {
	good := func() *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:pod-reader"}, Rules: []rbacv1.PolicyRule{
			podReader(), {NonResourceURLs: []string{"/healthz", "/api/*"}, Verbs: []string{"get"}},
		}}
	}
	aggregate := func(sels ...metav1.LabelSelector) func(*rbacv1.ClusterRole) {
		return func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sels} }
	}
	runCreate(t, ClusterRole, nil, good, []createCase[*rbacv1.ClusterRole]{
		{name: "valid"},
		{name: "non-resource URLs with resource names", mutate: func(r *rbacv1.ClusterRole) { r.Rules[1].ResourceNames = []string{"x"} },
			want: []problem{inv("rules[1].nonResourceURLs")}},
		{name: "non-resource rule without verbs", mutate: func(r *rbacv1.ClusterRole) { r.Rules[1].Verbs = nil },
			want: []problem{req("rules[1].verbs")}},
		{name: "aggregation", mutate: aggregate(metav1.LabelSelector{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}})},
		{name: "aggregation needs a selector", mutate: aggregate(), want: []problem{req("aggregationRule.clusterRoleSelectors")}},
		{name: "aggregation selector label", mutate: aggregate(metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "true"}}),
			want: []problem{inv("aggregationRule.clusterRoleSelectors[0].matchLabels"), inv("aggregationRule.clusterRoleSelectors[0]")}},
		{name: "aggregation selector operator", mutate: aggregate(metav1.LabelSelector{}, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: "Near"},
		}}), want: []problem{inv("aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator"), inv("aggregationRule.clusterRoleSelectors[1]")}},
	})
}

func TestRoleBinding(t *testing.T) {
	good := func() *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: meta("read-pods"),
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
			Subjects: []rbacv1.Subject{
				{Kind: "User", Name: "jane"}, {Kind: "Group", Name: "system:serviceaccounts:dev"}, {Kind: "ServiceAccount", Name: "default"},
			}}
	}
	runCreate(t, RoleBinding, defaults.RoleBinding, good, []createCase[*rbacv1.RoleBinding]{
		{name: "valid"},
		{name: "no subjects", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects = nil }},
		{name: "a cluster role", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "ClusterRole"; rb.RoleRef.Name = "view" }},
		{name: "role kind", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Kind = "Policy" }, want: []problem{nsup("roleRef.kind")}},
		{name: "role group", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.APIGroup = "example.com" }, want: []problem{nsup("roleRef.apiGroup")}},
		{name: "role name required", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "" }, want: []problem{req("roleRef.name")}},
		{name: "role name a path segment", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "a%b" }, want: []problem{inv("roleRef.name")}},
		{name: "subject name required", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[0].Name = "" }, want: []problem{req("subjects[0].name")}},
		{name: "subject kind", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[1].Kind = "Team" }, want: []problem{nsup("subjects[1].kind")}},
		{name: "user group", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[0].APIGroup = "v1" }, want: []problem{nsup("subjects[0].apiGroup")}},
		{name: "service account group", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].APIGroup = "rbac.authorization.k8s.io" },
			want: []problem{nsup("subjects[2].apiGroup")}},
		{name: "service account name", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].Name = "Default" }, want: []problem{inv("subjects[2].name")}},
		{name: "service account name required once", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects[2].Name = "" }, want: []problem{req("subjects[2].name")}},
	})
	runUpdate(t, RoleBinding, defaults.RoleBinding, good, []updateCase[*rbacv1.RoleBinding]{
		{name: "subjects may change", mutate: func(rb *rbacv1.RoleBinding) { rb.Subjects = rb.Subjects[:1] }},
		{name: "role may not", mutate: func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "pod-writer" }, want: []problem{inv("roleRef")}},
	})
}

func TestClusterRoleBinding(t *testing.T) {
	good := func() *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-all"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ksm", Namespace: "monitoring"}, {Kind: "Group", Name: "system:authenticated"}}}
	}
	runCreate(t, ClusterRoleBinding, defaults.ClusterRoleBinding, good, []createCase[*rbacv1.ClusterRoleBinding]{
		{name: "valid"},
		{name: "not a role", mutate: func(crb *rbacv1.ClusterRoleBinding) { crb.RoleRef.Kind = "Role" }, want: []problem{nsup("roleRef.kind")}},
		{name: "service account namespace", mutate: func(crb *rbacv1.ClusterRoleBinding) { crb.Subjects[0].Namespace = "" },
			want: []problem{req("subjects[0].namespace")}},
	})
	runUpdate(t, ClusterRoleBinding, defaults.ClusterRoleBinding, good, []updateCase[*rbacv1.ClusterRoleBinding]{
		{name: "role may not change", mutate: func(crb *rbacv1.ClusterRoleBinding) { crb.RoleRef.Name = "edit" }, want: []problem{inv("roleRef")}},
	})
}

// The messages are Kubernetes' own, which users search for.
func TestRBACMessages(t *testing.T) {
	cases := []struct {
		name string
		errs func() string
		want string
	}{
		{"namespaced URLs", func() string {
			return Role.ValidateCreate(&rbacv1.Role{ObjectMeta: meta("r"), Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/x"}, Verbs: []string{"get"}}}}, true).ToAggregate().Error()
		}, "namespaced rules cannot apply to non-resource URLs"},
		{"both", func() string {
			return ClusterRole.ValidateCreate(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{
				{NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			}}, false).ToAggregate().Error()
		}, "rules cannot apply to both regular resources and non-resource URLs"},
		{"verbs", func() string {
			return Role.ValidateCreate(&rbacv1.Role{ObjectMeta: meta("r"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, true).ToAggregate().Error()
		}, "rules[0].verbs: Required value: verbs must contain at least one value"},
		{"roleRef", func() string {
			old := &rbacv1.RoleBinding{ObjectMeta: meta("b"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "a"}}
			n := old.DeepCopy()
			n.RoleRef.Name = "b"
			return RoleBinding.ValidateUpdate(n, old).ToAggregate().Error()
		}, "cannot change roleRef"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.errs(); !strings.Contains(got, tc.want) {
				t.Errorf("errors %q do not say %q", got, tc.want)
			}
		})
	}
}
