package scheme

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		in, plural string
	}{
		{"po", "pods"}, {"pod", "pods"}, {"Pods", "pods"}, {"Pod", "pods"},
		{"svc", "services"}, {"deploy", "deployments"}, {"deployments.apps", "deployments"},
		{"rs", "replicasets"}, {"hpa", "horizontalpodautoscalers"}, {"no", "nodes"},
		{"ns", "namespaces"}, {"ing", "ingresses"}, {"fn", "functions"}, {"ev", "events"}, {"sa", "serviceaccounts"},
		{"sc", "storageclasses"}, {"storageclass.storage.k8s.io", "storageclasses"}, {"pvc", "persistentvolumeclaims"},
		{"role", "roles"}, {"clusterroles.rbac.authorization.k8s.io", "clusterroles"}, {"RoleBinding", "rolebindings"},
		{"clusterrolebinding.rbac", "clusterrolebindings"},
		{"quota", "resourcequotas"}, {"ResourceQuota", "resourcequotas"}, {"limits", "limitranges"}, {"limitrange", "limitranges"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			r, err := Lookup(tc.in)
			if err != nil || r.Plural != tc.plural {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", tc.in, r, err, tc.plural)
			}
		})
	}
	if _, err := Lookup("widgets"); err == nil {
		t.Fatal("unknown resource resolved")
	}
	if _, err := Lookup("pods.apps"); err == nil {
		t.Fatal("pods resolved in group apps")
	}
}

// Every served resource must be a registered kind whose New and NewList agree with its GVK.
func TestResourcesMatchScheme(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Resources {
		if seen[r.Plural] {
			t.Errorf("duplicate plural %s", r.Plural)
		}
		seen[r.Plural] = true
		kinds, _, err := Scheme.ObjectKinds(r.New())
		if err != nil || len(kinds) == 0 || kinds[0] != r.GVK {
			t.Errorf("%s: New() is %v (%v), resource says %v", r.Plural, kinds, err, r.GVK)
		}
		if !meta.IsListType(r.NewList()) {
			t.Errorf("%s: NewList() is not a list", r.Plural)
		}
		lk, _, err := Scheme.ObjectKinds(r.NewList())
		if err != nil || lk[0].Kind != r.GVK.Kind+"List" {
			t.Errorf("%s: list kind %v (%v)", r.Plural, lk, err)
		}
		if got, ok := ByGVR(r.GVR()); !ok || got != r {
			t.Errorf("%s: ByGVR does not find it", r.Plural)
		}
	}
}
