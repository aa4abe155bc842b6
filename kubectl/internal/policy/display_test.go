package policy

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The reviews are the apiserver's SelfSubjectRulesReview answers; the rows are what the real
// kubectl printed for them.
func TestForDisplay(t *testing.T) {
	tests := []struct {
		name   string
		review string
		want   [][]string
	}{
		{
			name: "cluster admin",
			review: `{"nonResourceRules":[{"nonResourceURLs":["*"],"verbs":["*"]},{"nonResourceURLs":["/livez","/readyz"],"verbs":["get"]},{"nonResourceURLs":["*"],"verbs":["*"]}],
				"resourceRules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},
				{"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews","selfsubjectrulesreviews"],"verbs":["create"]}]}`,
			want: [][]string{
				{"*.*", "[]", "[]", "[*]"},
				{"", "[*]", "[]", "[*]"},
				{"", "[*]", "[]", "[*]"},
				{"selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"},
				{"selfsubjectrulesreviews.authorization.k8s.io", "[]", "[]", "[create]"},
				{"", "[/livez]", "[]", "[get]"},
				{"", "[/readyz]", "[]", "[get]"},
			},
		},
		{
			name: "verbs merge in the order first seen; names, groups and subresources stay apart",
			review: `{"resourceRules":[{"apiGroups":[""],"resources":["pods"],"verbs":["watch","get"]},{"apiGroups":[""],"resources":["pods"],"verbs":["list","get"]},
				{"apiGroups":["apps"],"resources":["deployments","deployments/scale"],"verbs":["get"],"resourceNames":["a","b"]},
				{"apiGroups":["","apps"],"resources":["configmaps"],"verbs":["get"]}],
				"nonResourceRules":[{"nonResourceURLs":["/healthz","/version/"],"verbs":["get"]},{"nonResourceURLs":["/healthz"],"verbs":["get"]}]}`,
			want: [][]string{
				{"", "[/healthz]", "[]", "[get]"},
				{"", "[/healthz]", "[]", "[get]"},
				{"", "[/version/]", "[]", "[get]"},
				{"configmaps", "[]", "[]", "[get]"},
				{"configmaps.apps", "[]", "[]", "[get]"},
				{"deployments.apps/scale", "[]", "[a]", "[get]"},
				{"deployments.apps/scale", "[]", "[b]", "[get]"},
				{"deployments.apps", "[]", "[a]", "[get]"},
				{"deployments.apps", "[]", "[b]", "[get]"},
				{"pods", "[]", "[]", "[watch get list]"},
			},
		},
		{name: "nothing", review: `{}`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var status authorizationv1.SubjectRulesReviewStatus
			if err := json.Unmarshal([]byte(tt.review), &status); err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, r := range ForDisplay(FromRulesReview(status)) {
				got = append(got, Row(r))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBreakdown(t *testing.T) {
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		want []rbacv1.PolicyRule
	}{
		{
			name: "groups, resources and verbs multiply",
			rule: rbacv1.PolicyRule{APIGroups: []string{"", "apps"}, Resources: []string{"a"}, Verbs: []string{"get", "list"}},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"a"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"a"}, Verbs: []string{"list"}},
				{APIGroups: []string{"apps"}, Resources: []string{"a"}, Verbs: []string{"get"}},
				{APIGroups: []string{"apps"}, Resources: []string{"a"}, Verbs: []string{"list"}},
			},
		},
		{
			name: "resource names",
			rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"x", "y"}},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"x"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"y"}},
			},
		},
		{
			name: "non-resource URLs",
			rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/a", "/b"}, Verbs: []string{"get", "post"}},
			want: []rbacv1.PolicyRule{
				{NonResourceURLs: []string{"/a"}, Verbs: []string{"get"}},
				{NonResourceURLs: []string{"/a"}, Verbs: []string{"post"}},
				{NonResourceURLs: []string{"/b"}, Verbs: []string{"get"}},
				{NonResourceURLs: []string{"/b"}, Verbs: []string{"post"}},
			},
		},
		{name: "no verbs", rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Breakdown(tt.rule)); diff != "" {
				t.Errorf("Breakdown (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceGroup(t *testing.T) {
	tests := []struct {
		resources, groups []string
		want              string
	}{
		{resources: []string{"pods"}, groups: []string{""}, want: "pods"},
		{resources: []string{"pods/log"}, groups: []string{""}, want: "pods/log"},
		{resources: []string{"deployments/scale"}, groups: []string{"apps"}, want: "deployments.apps/scale"},
		{resources: []string{"*"}, groups: []string{"*"}, want: "*.*"},
		{resources: []string{"pods"}, want: "pods"},
		{want: ""},
	}
	for _, tt := range tests {
		if got := ResourceGroup(tt.resources, tt.groups); got != tt.want {
			t.Errorf("ResourceGroup(%q, %q) = %q, want %q", tt.resources, tt.groups, got, tt.want)
		}
	}
}
