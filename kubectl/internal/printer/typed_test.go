package printer

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The wanted outputs are the real kubectl's for the same objects.
func TestTyped(t *testing.T) {
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "crb"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: "ns"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "c"},
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
	}
	stored := time.Date(2026, 11, 28, 2, 13, 26, 0, time.UTC)
	tr := &authenticationv1.TokenRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default", UID: "6322", CreationTimestamp: metav1.NewTime(stored)},
		Spec:       authenticationv1.TokenRequestSpec{Audiences: []string{"https://kubernetes.default.svc.cluster.local"}, ExpirationSeconds: ptr(int64(600))},
		Status:     authenticationv1.TokenRequestStatus{Token: "X", ExpirationTimestamp: metav1.NewTime(stored.Add(10 * time.Minute))},
	}
	tests := []struct {
		name   string
		format string
		obj    runtime.Object
		want   string
	}{
		{name: "json of a new binding", format: "json", obj: crb, want: `{
    "kind": "ClusterRoleBinding",
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": {
        "name": "crb",
        "creationTimestamp": null
    },
    "subjects": [
        {
            "kind": "ServiceAccount",
            "name": "sa",
            "namespace": "ns"
        }
    ],
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "c"
    }
}
`},
		{name: "json of a new namespaced role", format: "json", obj: role, want: `{
    "kind": "Role",
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": {
        "name": "x",
        "namespace": "team",
        "creationTimestamp": null
    },
    "rules": [
        {
            "verbs": [
                "get"
            ],
            "apiGroups": [
                ""
            ],
            "resources": [
                "pods"
            ]
        }
    ]
}
`},
		{name: "yaml of a new role", format: "yaml", obj: role, want: `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  creationTimestamp: null
  name: x
  namespace: team
rules:
- apiGroups:
  - ""
  resources:
  - pods
  verbs:
  - get
`},
		{name: "yaml of a stored object", format: "yaml", obj: tr, want: `apiVersion: authentication.k8s.io/v1
kind: TokenRequest
metadata:
  creationTimestamp: "2026-11-28T02:13:26Z"
  name: default
  namespace: default
  uid: "6322"
spec:
  audiences:
  - https://kubernetes.default.svc.cluster.local
  boundObjectRef: null
  expirationSeconds: 600
status:
  expirationTimestamp: "2026-11-28T02:23:26Z"
  token: X
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Typed(&b, tt.format, tt.obj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
