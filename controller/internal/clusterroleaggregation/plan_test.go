package clusterroleaggregation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{verb}}
}

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregated(name string, labels map[string]string, sels ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r := role(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sels}
	return r
}

func matching(labels map[string]string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: labels}
}

var (
	toView = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	toEdit = map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
)

func TestRules(t *testing.T) {
	cases := []struct {
		name string
		role *rbacv1.ClusterRole
		all  []*rbacv1.ClusterRole
		want []rbacv1.PolicyRule
	}{
		{name: "not aggregated", role: role("plain", nil, rule("get", "pods")),
			all: []*rbacv1.ClusterRole{role("b", toView, rule("get", "pods"))}},
		{name: "nothing matches", role: aggregated("view", nil, matching(toView)),
			all: []*rbacv1.ClusterRole{role("b", toEdit, rule("get", "pods"))}},
		{name: "by name, then rule order", role: aggregated("view", nil, matching(toView)),
			all: []*rbacv1.ClusterRole{
				role("zz", toView, rule("list", "secrets")),
				role("aa", toView, rule("watch", "pods"), rule("get", "pods")),
				role("mm", toEdit, rule("delete", "pods")),
			},
			want: []rbacv1.PolicyRule{rule("watch", "pods"), rule("get", "pods"), rule("list", "secrets")}},
		{name: "each rule once", role: aggregated("view", nil, matching(toView)),
			all: []*rbacv1.ClusterRole{
				role("a", toView, rule("get", "pods")),
				role("b", toView, rule("get", "pods"), rule("get", "services")),
				// Semantically the same rule: an empty list is no list.
				role("c", toView, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}, ResourceNames: []string{}}),
			},
			want: []rbacv1.PolicyRule{rule("get", "pods"), rule("get", "services")}},
		{name: "never itself", role: aggregated("view", toView, matching(toView)),
			all: []*rbacv1.ClusterRole{
				aggregated("view", toView, matching(toView)),
				role("a", toView, rule("get", "pods")),
			},
			want: []rbacv1.PolicyRule{rule("get", "pods")}},
		{name: "selectors in turn", role: aggregated("edit", nil, matching(toEdit), matching(toView)),
			all: []*rbacv1.ClusterRole{
				role("a", toView, rule("get", "pods")),
				role("b", toEdit, rule("create", "pods")),
			},
			want: []rbacv1.PolicyRule{rule("create", "pods"), rule("get", "pods")}},
		{name: "an aggregated role aggregates what another aggregated", role: aggregated("admin", nil, matching(toEdit)),
			all: func() []*rbacv1.ClusterRole {
				edit := aggregated("edit", toEdit, matching(toView))
				edit.Rules = []rbacv1.PolicyRule{rule("get", "pods")}
				return []*rbacv1.ClusterRole{edit, role("a", toView, rule("get", "pods"))}
			}(),
			want: []rbacv1.PolicyRule{rule("get", "pods")}},
		{name: "expressions", role: aggregated("ops", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"ops", "sre"}},
		}}),
			all: []*rbacv1.ClusterRole{
				role("a", map[string]string{"team": "sre"}, rule("get", "nodes")),
				role("b", map[string]string{"team": "dev"}, rule("get", "pods")),
			},
			want: []rbacv1.PolicyRule{rule("get", "nodes")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rules(tc.role, tc.all)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}

	bad := aggregated("bad", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}})
	if _, err := Rules(bad, nil); err == nil {
		t.Error("a selector that does not parse gave no error")
	}
}

func TestUpdate(t *testing.T) {
	cases := []struct {
		name  string
		role  *rbacv1.ClusterRole
		rules []rbacv1.PolicyRule
		want  *rbacv1.ClusterRole
	}{
		{name: "same rules", role: aggregated("view", nil, matching(toView)), rules: nil},
		{name: "none and empty are the same", role: aggregated("view", nil, matching(toView)), rules: []rbacv1.PolicyRule{}},
		{name: "new rules", role: aggregated("view", nil, matching(toView)), rules: []rbacv1.PolicyRule{rule("get", "pods")},
			want: func() *rbacv1.ClusterRole {
				r := aggregated("view", nil, matching(toView))
				r.Rules = []rbacv1.PolicyRule{rule("get", "pods")}
				return r
			}()},
		{name: "rules gone", role: func() *rbacv1.ClusterRole {
			r := aggregated("view", nil, matching(toView))
			r.Rules = []rbacv1.PolicyRule{rule("get", "pods")}
			return r
		}(), rules: nil, want: func() *rbacv1.ClusterRole {
			r := aggregated("view", nil, matching(toView))
			r.Rules = []rbacv1.PolicyRule{}
			return r
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.role.DeepCopy()
			got := Update(tc.role, tc.rules)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("update (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.role); diff != "" {
				t.Errorf("the cached role changed (-before +after):\n%s", diff)
			}
		})
	}
}
