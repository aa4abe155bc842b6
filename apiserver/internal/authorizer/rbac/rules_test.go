package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

func res(verb, group, resource, subresource, name string) authorizer.Attributes {
	return authorizer.Attributes{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: subresource, Name: name}
}

func nonRes(verb, path string) authorizer.Attributes {
	return authorizer.Attributes{Verb: verb, Path: path}
}

// The cases follow Kubernetes' TestRuleMatches.
func TestRuleAllows(t *testing.T) {
	withNames := func(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
		r.ResourceNames = names
		return r
	}
	cases := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.Attributes
		want  bool
	}{
		{"star verb", rule("*", "group1", "resource1", ""), res("verb1", "group1", "resource1", "", ""), true},
		{"star verb, other group", rule("*", "group1", "resource1", ""), res("verb1", "group2", "resource1", "", ""), false},
		{"star group", rule("verb1", "*", "resource1", ""), res("verb1", "group2", "resource1", "", ""), true},
		{"star resource", rule("verb1", "group1", "*", ""), res("verb1", "group1", "resource2", "", ""), true},
		{"star resource matches subresources", rule("verb1", "group1", "*", ""), res("verb1", "group1", "resource2", "sub", ""), true},
		{"exact verb", rule("verb1", "group1", "resource1", ""), res("verb1", "group1", "resource1", "", ""), true},
		{"other verb", rule("verb1", "group1", "resource1", ""), res("verb2", "group1", "resource1", "", ""), false},
		{"verbs are case-sensitive", rule("get", "*", "*", ""), res("GET", "", "pods", "", ""), false},
		{"the core group is the empty string", rule("get", "", "pods", ""), res("get", "", "pods", "", ""), true},
		{"the core group is not another", rule("get", "", "pods", ""), res("get", "apps", "pods", "", ""), false},
		{"resource does not match its subresource", rule("get", "", "pods", ""), res("get", "", "pods", "status", "p"), false},
		{"resource/subresource", rule("get", "", "pods/log", ""), res("get", "", "pods", "log", "p"), true},
		{"resource/subresource is not the resource", rule("get", "", "pods/log", ""), res("get", "", "pods", "", "p"), false},
		{"*/subresource matches any resource's", rule("update", "*", "*/scale", ""), res("update", "apps", "deployments", "scale", "d"), true},
		{"*/subresource not another subresource", rule("update", "*", "*/scale", ""), res("update", "apps", "deployments", "status", "d"), false},
		{"*/subresource not the resource", rule("update", "*", "*/scale", ""), res("update", "apps", "deployments", "", "d"), false},
		{"*/subresource not a longer subresource", rule("update", "*", "*/scale", ""), res("update", "apps", "deployments", "rescale", "d"), false},
		{"resourceNames never match without a name", withNames(rule("verb1", "group1", "resource1", ""), "foo", "bar"), res("verb1", "group1", "resource1", "", ""), false},
		{"resourceNames match a listed name", withNames(rule("verb1", "group1", "resource1", ""), "foo", "bar"), res("verb1", "group1", "resource1", "", "bar"), true},
		{"resourceNames refuse another name", withNames(rule("verb1", "group1", "resource1", ""), "foo", "bar"), res("verb1", "group1", "resource1", "", "baz"), false},
		{"resourceNames with a subresource", withNames(rule("verb1", "group1", "resource1/sub1", ""), "foo"), res("verb1", "group1", "resource1", "sub1", "foo"), true},
		{"resourceNames with another subresource", withNames(rule("verb1", "group1", "resource1/sub1", ""), "foo"), res("verb1", "group1", "resource1", "sub2", "foo"), false},
		{"a resource rule allows no path", rule("*", "*", "*", ""), nonRes("get", "/healthz"), false},
		{"exact url", rule("get", "", "", "/healthz"), nonRes("get", "/healthz"), true},
		{"exact url, other verb", rule("get", "", "", "/healthz"), nonRes("post", "/healthz"), false},
		{"star url", rule("get", "", "", "*"), nonRes("get", "/anything/at/all"), true},
		{"url prefix", rule("get", "", "", "/apis/*"), nonRes("get", "/apis/v1/foo"), true},
		{"url prefix needs what it prefixes", rule("get", "", "", "/apis/*"), nonRes("get", "/apis"), false},
		{"url without star is exact", rule("get", "", "", "/apis"), nonRes("get", "/apis/v1"), false},
		{"a url rule allows no resource", rule("*", "", "", "*"), res("get", "", "pods", "", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tc.attrs, tc.rule, got, tc.want)
			}
		})
	}
}

func TestCompactString(t *testing.T) {
	cases := []struct {
		rule rbacv1.PolicyRule
		want string
	}{
		{rule("get,list", "", "pods", ""), `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{rule("get", "", "", "/healthz,/api/*"), `{NonResourceURLs:["/healthz" "/api/*"], Verbs:["get"]}`},
		{rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"d"}},
			`{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}`},
		{rbacv1.PolicyRule{}, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := CompactString(tc.rule); got != tc.want {
				t.Errorf("CompactString = %s, want %s", got, tc.want)
			}
		})
	}
}
