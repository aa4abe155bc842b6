package registry

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/crdschema"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/shared/scheme"
)

// customStrategy is the Strategy of one served version of a custom resource: its
// definition's schema prunes, defaults and validates, and a status subresource, when
// defined, owns status.
type customStrategy struct {
	res    *scheme.Resource
	v      *crdschema.Version
	status bool
}

var _ Strategy = (*customStrategy)(nil)

func (s *customStrategy) content(obj runtime.Object) map[string]any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	return nil
}

func (s *customStrategy) PrepareForCreate(obj runtime.Object) {
	if c := s.content(obj); c != nil && s.status {
		delete(c, "status")
	}
}

func (s *customStrategy) PrepareForUpdate(obj, old runtime.Object) {
	if s.status {
		copyField(obj, old, "Status")
	}
}

// Canonicalize drops what the schema does not know, as Kubernetes prunes on decoding.
func (s *customStrategy) Canonicalize(obj runtime.Object) {
	if c := s.content(obj); c != nil {
		s.v.Prune(c)
	}
}

func (s *customStrategy) Default(obj runtime.Object) {
	if c := s.content(obj); c != nil {
		s.v.Default(c)
	}
}

func (s *customStrategy) DefaultUpdate(obj, _ runtime.Object) { s.Default(obj) }

func (s *customStrategy) Admit(context.Context, *Registry, runtime.Object) error { return nil }

func (s *customStrategy) Validate(obj runtime.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return field.ErrorList{field.InternalError(nil, errNotCustom)}
	}
	return s.v.Validate(u, nil)
}

func (s *customStrategy) ValidateNew(runtime.Object) field.ErrorList { return nil }

func (s *customStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	u, ok1 := obj.(*unstructured.Unstructured)
	o, ok2 := old.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return field.ErrorList{field.InternalError(nil, errNotCustom)}
	}
	// As for built-in kinds, an update without a resourceVersion is the server's to allow.
	var errs field.ErrorList
	for _, e := range s.v.Validate(u, o) {
		if e.Field != "metadata.resourceVersion" {
			errs = append(errs, e)
		}
	}
	return errs
}

func (s *customStrategy) ValidateVersion(*scheme.Resource, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

func (s *customStrategy) Allocate(context.Context, runtime.Object, runtime.Object) (func(), error) {
	return func() {}, nil
}

func (s *customStrategy) Release(context.Context, runtime.Object, runtime.Object) {}
func (s *customStrategy) CheckDelete(string) error                                { return nil }
func (s *customStrategy) GracePeriod(runtime.Object, *metav1.DeleteOptions) int64 { return 0 }
func (s *customStrategy) GCPolicy() GCPolicy                                      { return DeleteDependents }
func (s *customStrategy) Finalizing(runtime.Object) bool                          { return false }
func (s *customStrategy) MarkDeleting(runtime.Object)                             {}

func (s *customStrategy) Fields(obj runtime.Object) fields.Set {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return s.v.Fields(u)
	}
	return fields.Set{}
}

// printer lays out tables from the definition's additionalPrinterColumns.
func (s *customStrategy) printer() tables.Printer {
	return tables.Printer{Columns: s.v.Columns(), Row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return metav1.TableRow{}, errNotCustom
		}
		cells, err := s.v.CellsAt(u, now)
		if err != nil {
			return metav1.TableRow{}, err
		}
		return metav1.TableRow{Cells: cells}, nil
	}}
}

var errNotCustom = errors.New("not a custom object")
