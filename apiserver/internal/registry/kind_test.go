package registry

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/shared/scheme"
)

// Every served resource has a registered kind: adding a resource to scheme.Resources without
// its kind's file here fails this test. Empty objects validate without internal errors, and
// only an update across kinds is one.
func TestEveryServedKind(t *testing.T) {
	sts := strategies(nil)
	for _, r := range scheme.Resources {
		t.Run(r.Plural, func(t *testing.T) {
			st, ok := sts[r]
			if !ok {
				t.Fatalf("%s has no registered kind", r.Plural)
			}
			obj := r.New()
			for _, e := range st.Validate(obj) {
				if e.Type == field.ErrorTypeInternal {
					t.Fatalf("Validate(%T): %v", obj, e)
				}
			}
			for _, e := range st.ValidateUpdate(obj, r.New()) {
				if e.Type == field.ErrorTypeInternal {
					t.Fatalf("ValidateUpdate(%T): %v", obj, e)
				}
			}
		})
	}
	pods := sts[served("pods")]
	if errs := pods.ValidateUpdate(&corev1.Pod{}, &corev1.Service{}); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("update across kinds: got %v, want one internal error", errs)
	}
	if errs := newUnregistered(served("pods")).Validate(&corev1.Pod{}); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("a resource without a kind: got %v, want one internal error", errs)
	}
}

// A kind without defaults leaves its objects as they are.
func TestKindWithoutDefaults(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "b"}}
	strategies(nil)[served("configmaps")].Default(cm)
	if diff := cmp.Diff(&corev1.ConfigMap{Data: map[string]string{"a": "b"}}, cm); diff != "" {
		t.Errorf("defaulted configmap (-want +got):\n%s", diff)
	}
}

// Every served kind, as object and as list, gets a table of its own columns, which start with
// the name (events start with LAST SEEN, as in Kubernetes) and which its rows fit. Roles and
// ClusterRoles have no printer in Kubernetes either, and show the default NAME, CREATED AT;
// Kubernetes' printer of LimitRanges prints those same columns.
func TestEveryServedResource(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	defaultColumns := map[string]bool{"Role": true, "ClusterRole": true, "LimitRange": true, "CustomResourceDefinition": true}
	for _, r := range scheme.Resources {
		t.Run(r.Plural, func(t *testing.T) {
			for _, o := range []runtime.Object{r.New(), r.NewList()} {
				table, err := tables.For(o, tables.Options{}, now)
				if err != nil {
					t.Fatalf("For(%T): %v", o, err)
				}
				cols := table.ColumnDefinitions
				if len(cols) < 2 {
					t.Fatalf("%T: %d columns", o, len(cols))
				}
				if isDefault := len(cols) == 2 && cols[1].Name == "Created At"; isDefault != defaultColumns[r.GVK.Kind] {
					t.Errorf("%s shows the default columns: %t, want %t", r.GVK.Kind, isDefault, defaultColumns[r.GVK.Kind])
				}
				nameCols := 0
				for _, c := range cols {
					if c.Format == "name" {
						nameCols++
					}
				}
				if nameCols != 1 {
					t.Errorf("%T: %d columns with format name, want 1", o, nameCols)
				}
			}
		})
	}
}
