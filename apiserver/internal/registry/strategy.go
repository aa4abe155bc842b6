package registry

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/shared/scheme"
)

// Strategy is a registered Kind as the verbs see it: what they call at fixed points of every
// write, delete and list, for objects of any kind. Each method runs the Kind's hook of the
// same name, or does what suits most kinds where the Kind has none; DefaultUpdate runs
// KeepOnUpdate then Default, Validate and ValidateUpdate the Kind's Validation, Allocate and
// Release the allocator where the Kind Allocates. Allocate reserves what obj needs beyond what
// old (nil on create) holds, and undo releases it when the write does not happen; Release
// frees what old held and obj (nil once deleted) no longer does.
type Strategy interface {
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what a write of the main endpoint keeps: status,
	// where a status subresource owns it, and what the Kind's PrepareForUpdate keeps.
	PrepareForUpdate(obj, old runtime.Object)
	Canonicalize(obj runtime.Object)
	Default(obj runtime.Object)
	DefaultUpdate(obj, old runtime.Object)
	Admit(ctx context.Context, r *Registry, obj runtime.Object) error
	Validate(obj runtime.Object) field.ErrorList
	// ValidateNew checks, on create only, what the Kind's Validation holds new objects to.
	ValidateNew(obj runtime.Object) field.ErrorList
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// ValidateVersion runs the Kind's VersionValidation for a write through served (nil for
	// the stored version: nothing more to check); old is nil on create.
	ValidateVersion(served *scheme.Resource, obj, old runtime.Object) field.ErrorList
	Allocate(ctx context.Context, old, obj runtime.Object) (undo func(), err error)
	Release(ctx context.Context, old, obj runtime.Object)
	CheckDelete(name string) error
	GracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64
	GCPolicy() GCPolicy
	Finalizing(obj runtime.Object) bool
	MarkDeleting(obj runtime.Object)
	// Fields lists what a field selector may name, with obj's values: metadata.name and
	// metadata.namespace, and the Kind's Fields.
	Fields(obj runtime.Object) fields.Set
}

// kindStrategy is the Strategy of Kind k: its hooks, and what suits most kinds where it has
// none. The registry hands each kind only objects of its type.
type kindStrategy[T runtime.Object] struct {
	k     Kind[T]
	alloc *allocator.Allocator
}

func (s kindStrategy[T]) hasStatus() bool { return s.k.Resource.HasSubresource("status") }

func (s kindStrategy[T]) PrepareForCreate(obj runtime.Object) {
	if s.k.PrepareForCreate != nil {
		s.k.PrepareForCreate(obj.(T))
	} else if s.hasStatus() {
		resetField(obj, "Status")
	}
}

func (s kindStrategy[T]) PrepareForUpdate(obj, old runtime.Object) {
	if s.hasStatus() {
		copyField(obj, old, "Status")
	}
	if o, ok := old.(T); ok && s.k.PrepareForUpdate != nil {
		s.k.PrepareForUpdate(obj.(T), o)
	}
}

func (s kindStrategy[T]) Canonicalize(obj runtime.Object) {
	if s.k.Canonicalize != nil {
		s.k.Canonicalize(obj.(T))
	}
}

func (s kindStrategy[T]) Default(obj runtime.Object) {
	if s.k.Default != nil {
		s.k.Default(obj.(T))
	}
}

func (s kindStrategy[T]) Admit(ctx context.Context, r *Registry, obj runtime.Object) error {
	if s.k.Admit == nil {
		return nil
	}
	return s.k.Admit(ctx, r, obj.(T))
}

func (s kindStrategy[T]) DefaultUpdate(obj, old runtime.Object) {
	if o, ok := old.(T); ok && s.k.KeepOnUpdate != nil {
		s.k.KeepOnUpdate(obj.(T), o)
	}
	s.Default(obj)
}

func (s kindStrategy[T]) Validate(obj runtime.Object) field.ErrorList {
	t, ok := obj.(T)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("no validation for %T", obj))}
	}
	return s.k.Validation.ValidateCreate(t, s.k.Resource.Namespaced)
}

func (s kindStrategy[T]) ValidateNew(obj runtime.Object) field.ErrorList {
	t, ok := obj.(T)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("no validation for %T", obj))}
	}
	return s.k.Validation.ValidateNew(t)
}

func (s kindStrategy[T]) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	n, ok := obj.(T)
	o, sameKind := old.(T)
	if !ok || !sameKind {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("update of %T with %T", old, obj))}
	}
	return s.k.Validation.ValidateUpdate(n, o)
}

func (s kindStrategy[T]) ValidateVersion(served *scheme.Resource, obj, old runtime.Object) field.ErrorList {
	if served == nil || s.k.VersionValidation == nil {
		return nil
	}
	n, ok := obj.(T)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("no validation for %T", obj))}
	}
	o, _ := old.(T) // the zero T on create
	return s.k.VersionValidation(served, n, o)
}

func (s kindStrategy[T]) Allocate(ctx context.Context, old, obj runtime.Object) (func(), error) {
	if !s.k.Allocates {
		return func() {}, nil
	}
	return s.alloc.Allocate(ctx, old, obj)
}

func (s kindStrategy[T]) Release(ctx context.Context, old, obj runtime.Object) {
	if s.k.Allocates {
		s.alloc.Release(ctx, old, obj)
	}
}

func (s kindStrategy[T]) CheckDelete(name string) error {
	if s.k.CheckDelete == nil {
		return nil
	}
	return s.k.CheckDelete(name)
}

func (s kindStrategy[T]) GracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	if s.k.GracePeriod == nil {
		return 0
	}
	return s.k.GracePeriod(obj.(T), opts)
}

func (s kindStrategy[T]) GCPolicy() GCPolicy { return s.k.GCPolicy }

func (s kindStrategy[T]) Finalizing(obj runtime.Object) bool {
	return s.k.Finalizing != nil && s.k.Finalizing(obj.(T))
}

func (s kindStrategy[T]) MarkDeleting(obj runtime.Object) {
	if s.k.MarkDeleting != nil {
		s.k.MarkDeleting(obj.(T))
	}
}

func (s kindStrategy[T]) Fields(obj runtime.Object) fields.Set {
	set := fields.Set{}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"], set["metadata.namespace"] = m.GetName(), m.GetNamespace()
	}
	if s.k.Fields != nil {
		maps.Copy(set, s.k.Fields(obj.(T)))
	}
	return set
}

// unregistered is the Strategy of a resource no kind registered: nothing is defaulted, and
// every write fails validation, so no unchecked object is stored.
type unregistered struct{ kindStrategy[runtime.Object] }

func newUnregistered(res *scheme.Resource) Strategy {
	return unregistered{kindStrategy[runtime.Object]{k: Kind[runtime.Object]{Resource: res}}}
}

func (unregistered) Validate(obj runtime.Object) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("no validation for %T", obj))}
}

func (u unregistered) ValidateUpdate(obj, _ runtime.Object) field.ErrorList { return u.Validate(obj) }

// checkFieldSelector rejects selectors on fields the resource does not index, as Kubernetes
// does.
func checkFieldSelector(st Strategy, res *scheme.Resource, sel fields.Selector) error {
	known := st.Fields(res.New())
	for _, req := range sel.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return fmt.Errorf("field label not supported: %s", req.Field)
		}
	}
	return nil
}

// structField returns the named top-level struct field of a typed object, if it has one.
func structField(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName(name)
	return f, f.IsValid()
}

// copyField sets dst.<name> to src.<name>; for unstructured objects, the field's JSON name.
func copyField(dst, src runtime.Object, name string) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		key := jsonName(name)
		if su, ok := src.(*unstructured.Unstructured); ok {
			if v, found := su.Object[key]; found {
				du.Object[key] = runtime.DeepCopyJSONValue(v)
				return
			}
		}
		delete(du.Object, key)
		return
	}
	d, ok1 := structField(dst, name)
	s, ok2 := structField(src, name)
	if ok1 && ok2 {
		d.Set(s)
	}
}

// resetField sets obj.<name> to its zero value.
func resetField(obj runtime.Object, name string) {
	if f, ok := structField(obj, name); ok {
		f.Set(reflect.Zero(f.Type()))
	}
}

// specFields are the parts of an object whose change is a new generation.
var specFields = []string{"Spec", "Data", "BinaryData", "StringData", "Subsets", "Template"}

// jsonName is the JSON name of a top-level field of the API types ("Status": "status").
func jsonName(field string) string {
	if field == "" {
		return field
	}
	return strings.ToLower(field[:1]) + field[1:]
}

// specChanged reports whether the spec-like part of an object differs, which bumps generation.
// For a custom object that is everything but metadata and status, as in Kubernetes.
func specChanged(newObj, oldObj runtime.Object) bool {
	if nu, ok := newObj.(*unstructured.Unstructured); ok {
		ou, ok := oldObj.(*unstructured.Unstructured)
		if !ok {
			return true
		}
		strip := func(m map[string]any) map[string]any {
			out := make(map[string]any, len(m))
			for k, v := range m {
				if k != "metadata" && k != "status" {
					out[k] = v
				}
			}
			return out
		}
		return !equality.Semantic.DeepEqual(strip(nu.Object), strip(ou.Object))
	}
	for _, name := range specFields {
		n, ok1 := structField(newObj, name)
		o, ok2 := structField(oldObj, name)
		if ok1 && ok2 && !equality.Semantic.DeepEqual(n.Interface(), o.Interface()) {
			return true
		}
	}
	return false
}
