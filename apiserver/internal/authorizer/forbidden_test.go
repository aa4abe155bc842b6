package authorizer

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

func TestForbidden(t *testing.T) {
	node := User{Name: "system:node:n1"}
	cases := []struct {
		name   string
		attrs  Attributes
		reason string
		want   metav1.Status
	}{
		{
			name:  "cluster-scoped collection",
			attrs: Attributes{User: node, Verb: "create", ResourceRequest: true, Resource: "namespaces"},
			want: metav1.Status{Message: `namespaces is forbidden: User "system:node:n1" cannot create resource "namespaces" in API group "" at the cluster scope`,
				Details: &metav1.StatusDetails{Kind: "namespaces"}},
		},
		{
			name:   "named object in a namespace, with the reason",
			attrs:  Attributes{User: node, Verb: "get", ResourceRequest: true, Namespace: "ns", Resource: "secrets", Name: "s"},
			reason: "no relationship found between node 'n1' and this object",
			want: metav1.Status{Message: `secrets "s" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "ns": no relationship found between node 'n1' and this object`,
				Details: &metav1.StatusDetails{Kind: "secrets", Name: "s"}},
		},
		{
			name:  "subresource in a group",
			attrs: Attributes{User: User{Name: "jane"}, Verb: "update", ResourceRequest: true, APIGroup: "apps", Namespace: "ns", Resource: "deployments", Subresource: "scale", Name: "d"},
			want: metav1.Status{Message: `deployments.apps "d" is forbidden: User "jane" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns"`,
				Details: &metav1.StatusDetails{Group: "apps", Kind: "deployments", Name: "d"}},
		},
		{
			name:  "pod log",
			attrs: Attributes{User: User{Name: "jane"}, Verb: "get", ResourceRequest: true, Namespace: "ns", Resource: "pods", Subresource: "log", Name: "p"},
			want: metav1.Status{Message: `pods "p" is forbidden: User "jane" cannot get resource "pods/log" in API group "" in the namespace "ns"`,
				Details: &metav1.StatusDetails{Kind: "pods", Name: "p"}},
		},
		{
			name:  "non-resource path",
			attrs: Attributes{User: User{Name: "system:anonymous"}, Verb: "get", Path: "/foo"},
			want: metav1.Status{Message: `forbidden: User "system:anonymous" cannot get path "/foo"`,
				Details: &metav1.StatusDetails{}},
		},
		{
			name:  "markup in a path is escaped",
			attrs: Attributes{User: User{Name: "jane"}, Verb: "get", Path: "/<script>&"},
			want: metav1.Status{Message: `forbidden: User "jane" cannot get path "/&lt;script&gt;&amp;"`,
				Details: &metav1.StatusDetails{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Forbidden(tc.attrs, tc.reason)
			if !errors.Is(err, apierror.ErrForbidden) {
				t.Fatalf("Forbidden is not ErrForbidden: %v", err)
			}
			want := tc.want
			want.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			want.Status, want.Code, want.Reason = metav1.StatusFailure, 403, metav1.StatusReasonForbidden
			if diff := cmp.Diff(want, err.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
