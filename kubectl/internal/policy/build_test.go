package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// served resolves like a server with pods (po), deployments (deploy) and replicasets (rs) in
// apps, and roles in rbac.authorization.k8s.io.
func served(gr schema.GroupResource) (schema.GroupResource, error) {
	known := map[string]schema.GroupResource{
		"pods": {Resource: "pods"}, "po": {Resource: "pods"},
		"deployments": {Group: "apps", Resource: "deployments"}, "deploy": {Group: "apps", Resource: "deployments"},
		"rs": {Group: "apps", Resource: "replicasets"}, "replicasets": {Group: "apps", Resource: "replicasets"},
		"roles": {Group: rbacv1.GroupName, Resource: "roles"}, "serviceaccounts": {Resource: "serviceaccounts"},
	}
	r, ok := known[gr.Resource]
	if !ok || (gr.Group != "" && !strings.HasPrefix(r.Group, gr.Group)) {
		return schema.GroupResource{}, &testNoMatch{gr}
	}
	return r, nil
}

type testNoMatch struct{ gr schema.GroupResource }

func (e *testNoMatch) Error() string { return "no " + e.gr.String() }

func TestRoleRules(t *testing.T) {
	tests := []struct {
		name                          string
		verbs, resources, names, urls []string
		want                          []rbacv1.PolicyRule
		wantErr                       string
	}{
		{
			// What the real kubectl made of these flags.
			name:      "groups resolved, sorted and deduplicated",
			verbs:     []string{"get", "list", "get"},
			resources: []string{"pods", "deployments", "rs.apps", "pods/log", "deployments.apps/scale", "po", "deploy.apps"},
			names:     []string{"a", "b", "a"},
			want: []rbacv1.PolicyRule{
				{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, ResourceNames: []string{"a", "b"}},
				{Verbs: []string{"get", "list"}, APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "deployments/scale"}, ResourceNames: []string{"a", "b"}},
			},
		},
		{
			name:  "every verb",
			verbs: []string{"get", "*", "list"}, resources: []string{"pods"},
			want: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}}},
		},
		{
			name:  "a bare * replaces the other resources",
			verbs: []string{"get"}, resources: []string{"pods", "*", "deployments"},
			want: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}, ResourceNames: []string{}}},
		},
		{
			name:  "checks stop at *: what follows is kept as typed",
			verbs: []string{"get"}, resources: []string{"*.apps", "foo"},
			want: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"foo"}, ResourceNames: []string{}},
				{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"*"}, ResourceNames: []string{}}},
		},
		{
			name:  "non-resource URLs make a rule of their own",
			verbs: []string{"get"}, resources: []string{"pods"}, urls: []string{"/logs/*", "/healthz", "/logs/*"},
			want: []rbacv1.PolicyRule{
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}},
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs/*", "/healthz"}},
			},
		},
		{
			name:  "bind goes with roles",
			verbs: []string{"bind"}, resources: []string{"roles"},
			want: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, ResourceNames: []string{}}},
		},
		{
			// A special verb's own resources need not be served (users are not).
			name:  "impersonate users",
			verbs: []string{"impersonate"}, resources: []string{"users"},
			want: []rbacv1.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{}}},
		},
		{name: "bind on pods", verbs: []string{"bind"}, resources: []string{"pods"}, wantErr: "can not perform 'bind' on 'pods' in group ''"},
		{name: "unknown resource", verbs: []string{"get"}, resources: []string{"foo"}, wantErr: "no foo"},
		{name: "unknown group", verbs: []string{"get"}, resources: []string{"pods.apps"}, wantErr: "no pods.apps"},
		{name: "group without a resource", verbs: []string{"get"}, resources: []string{".apps"}, wantErr: "resource must be specified if apiGroup/subresource specified"},
		{name: "subresource without a resource", verbs: []string{"get"}, resources: []string{"/status"}, wantErr: "resource must be specified if apiGroup/subresource specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verbs := Verbs(tt.verbs)
			rs, err := ResolveResources(ParseResources(tt.resources), verbs, served)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ResolveResources error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Rules(verbs, rs, Unique(tt.names), Unique(tt.urls))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseResources(t *testing.T) {
	got := ParseResources([]string{"pods", "deployments.apps/scale", "pods/log", "hpa.v1.autoscaling"})
	want := []Resource{{Resource: "pods"}, {Group: "apps", Resource: "deployments", Subresource: "scale"},
		{Resource: "pods", Subresource: "log"}, {Group: "v1.autoscaling", Resource: "hpa"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseResources (-want +got):\n%s", diff)
	}
}
