package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Widgets are an example kind that only this test serves: one registration, below, is all
// the registry and tables know of them. A widget's color defaults to blue and selects it; its
// size may not be negative, nor change; kubectl get shows NAME, COLOR and SIZE.
var widgets = register(Kind[*widget]{
	Resource: &scheme.Resource{
		GVK:    schema.GroupVersionKind{Group: "example.minik8s.io", Version: "v1", Kind: "Widget"},
		Plural: "widgets", Singular: "widget", Namespaced: true, Subresources: []string{"status"},
		New:     func() runtime.Object { return &widget{} },
		NewList: func() runtime.Object { return &widgetList{} },
	},
	Default: func(w *widget) {
		if w.Spec.Color == "" {
			w.Spec.Color = "blue"
		}
	},
	Validation: validation.Rules[*widget]{
		Spec: func(w *widget) field.ErrorList {
			if w.Spec.Size < 0 {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "size"), w.Spec.Size, "must be greater than or equal to 0")}
			}
			return nil
		},
		Update: func(n, o *widget) field.ErrorList {
			if n.Spec.Size != o.Spec.Size {
				return field.ErrorList{field.Forbidden(field.NewPath("spec", "size"), "field is immutable")}
			}
			return nil
		},
	},
	Fields: func(w *widget) fields.Set { return fields.Set{"spec.color": w.Spec.Color} },
	Table: tables.NewPrinter([]metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"}, {Name: "Color", Type: "string"}, {Name: "Size", Type: "integer"},
	}, func(w *widget, _ time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{w.Name, w.Spec.Color, int64(w.Spec.Size)}}
	}),
})

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec   `json:"spec"`
	Status            widgetStatus `json:"status,omitzero"`
}

type widgetSpec struct {
	Color string `json:"color,omitempty"`
	Size  int32  `json:"size,omitempty"`
}

type widgetStatus struct {
	Painted bool `json:"painted,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	c := &widgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*widget))
	}
	return c
}

// Creating, validating, defaulting, listing by field and showing a table of widgets all
// follow their one registration.
func TestExampleKind(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	key := Key{Resource: widgets.Resource, Namespace: "default"}
	newWidget := func(name, color string, size int32) *widget {
		return &widget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: widgetSpec{Color: color, Size: size},
			Status: widgetStatus{Painted: true}}
	}

	t.Run("create defaults and splits off status", func(t *testing.T) {
		w := mustCreate(t, r, key.Resource, "default", newWidget("plain", "", 1)).(*widget)
		if diff := cmp.Diff(widgetSpec{Color: "blue", Size: 1}, w.Spec); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
		if w.Status.Painted {
			t.Error("a client set the status of a kind with a status subresource")
		}
	})
	mustCreate(t, r, key.Resource, "default", newWidget("red", "red", 2))

	t.Run("validation on create and update", func(t *testing.T) {
		_, err := r.Create(ctx, key, newWidget("Bad_Name", "", -1), false)
		wantCauses(t, err, "metadata.name", "spec.size")
		k := key
		k.Name = "red"
		_, err = r.Update(ctx, k, UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
			cur.(*widget).Spec.Size = 3
			return cur, "", nil
		})
		wantCauses(t, err, "spec.size")
	})

	t.Run("field selectors", func(t *testing.T) {
		sel := Selectors{Fields: fields.OneTermEqualSelector("spec.color", "red")}
		if err := r.CheckSelectors(key.Resource, sel); err != nil {
			t.Fatal(err)
		}
		list, err := r.List(ctx, key, ListOptions{Selectors: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].(*widget).Name != "red" {
			t.Errorf("spec.color=red selected %v", list.Items)
		}
		if err := r.CheckSelectors(key.Resource, Selectors{Fields: fields.OneTermEqualSelector("spec.size", "2")}); !errors.Is(err, apierror.ErrBadRequest) {
			t.Errorf("a field the kind does not index: err = %v, want Bad Request", err)
		}
	})

	t.Run("table", func(t *testing.T) {
		list, err := r.List(ctx, key, ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := NewList(key.Resource, list.Items, list.Revision, "")
		if err != nil {
			t.Fatal(err)
		}
		table, err := tables.For(obj, tables.Options{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got [][]any
		for _, row := range table.Rows {
			got = append(got, row.Cells)
		}
		if diff := cmp.Diff([][]any{{"plain", "blue", int64(1)}, {"red", "red", int64(2)}}, got); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	})
}

// wantCauses checks that err is Invalid with a cause for each field, and no other.
func wantCauses(t *testing.T, err error, fields ...string) {
	t.Helper()
	var apiErr *apierror.Error
	if !errors.As(err, &apiErr) || !errors.Is(err, apierror.ErrInvalid) {
		t.Fatalf("err = %v, want Invalid", err)
	}
	var got []string
	for _, c := range apiErr.Status.Details.Causes {
		got = append(got, c.Field)
	}
	if diff := cmp.Diff(fields, got); diff != "" {
		t.Errorf("causes (-want +got):\n%s\n%v", diff, err)
	}
}
