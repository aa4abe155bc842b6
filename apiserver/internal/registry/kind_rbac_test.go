package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
)

// A binding is stored with its groups defaulted, whether or not its role exists yet; its
// roleRef is fixed once made. A Role refuses what only a ClusterRole may say.
func TestRBACKinds(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	crbs := resource(t, "clusterrolebindings")

	crb := mustCreate(t, r, crbs, "", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ksm"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "not-yet-made"},
		Subjects: []rbacv1.Subject{
			{Kind: "ServiceAccount", Name: "ksm", Namespace: "monitoring"}, {Kind: "Group", Name: "system:authenticated"},
		}}).(*rbacv1.ClusterRoleBinding)
	wantRef := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "not-yet-made"}
	wantSubjects := []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "ksm", Namespace: "monitoring"},
		{Kind: "Group", Name: "system:authenticated", APIGroup: "rbac.authorization.k8s.io"},
	}
	if diff := cmp.Diff(wantRef, crb.RoleRef); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSubjects, crb.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}

	_, err := r.Update(ctx, Key{Resource: crbs, Name: "ksm"}, UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		cur.(*rbacv1.ClusterRoleBinding).RoleRef.Name = "cluster-admin"
		return cur, "", nil
	})
	wantCauses(t, err, "roleRef")

	_, err = r.Create(ctx, Key{Resource: resource(t, "roles"), Namespace: "default"}, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "health"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}},
	}, false)
	wantCauses(t, err, "rules[0].nonResourceURLs")

	_, err = r.Create(ctx, Key{Resource: resource(t, "rolebindings"), Namespace: "default"}, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects:   []rbacv1.Subject{{Kind: "Robot", Name: "r2"}},
	}, false)
	wantCauses(t, err, "subjects[0].kind")
}
