package registry

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/scheme"
)

// Strategy is what is special about one kind. The registry calls it at fixed points of every
// verb; the generic implementation (embed it) does what fits most kinds, so a kind's strategy
// overrides only what differs.
type Strategy interface {
	// PrepareForCreate clears what a client may not set when creating: status, mostly.
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what a write of the main endpoint keeps: status,
	// where a status subresource owns it.
	PrepareForUpdate(obj, old runtime.Object)
	// Canonicalize folds write-only conveniences into the stored form.
	Canonicalize(obj runtime.Object)
	// Default fills defaults on create; DefaultUpdate on update, where it may carry over
	// what the server set before and a replacing client leaves out.
	Default(obj runtime.Object)
	DefaultUpdate(obj, old runtime.Object)
	// Validate and ValidateUpdate return every problem with its field path.
	Validate(obj runtime.Object) field.ErrorList
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// Allocate reserves what obj needs beyond what old (nil on create) holds; undo releases
	// it when the write does not happen. Release frees what old held and obj (nil once
	// deleted) no longer does.
	Allocate(ctx context.Context, old, obj runtime.Object) (undo func(), err error)
	Release(ctx context.Context, old, obj runtime.Object)
	// CheckDelete refuses a deletion outright (a protected namespace).
	CheckDelete(name string) error
	// GracePeriod is how long obj may take to go away once deleted; 0 deletes at once.
	GracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// GCPolicy is what happens to dependents when a delete does not say.
	GCPolicy() GCPolicy
	// Finalizing reports whether obj waits for something besides metadata.finalizers before
	// it may go (a namespace with content to remove).
	Finalizing(obj runtime.Object) bool
	// MarkDeleting records on obj that deletion has begun (a namespace turns Terminating).
	MarkDeleting(obj runtime.Object)
	// Fields lists what a field selector may name, with obj's values.
	Fields(obj runtime.Object) fields.Set
}

// generic is the Strategy of kinds with nothing special, and the base of the others.
type generic struct {
	res *scheme.Resource
}

func (g generic) hasStatus() bool { return g.res.HasSubresource("status") }

func (g generic) PrepareForCreate(obj runtime.Object) {
	if g.hasStatus() {
		resetField(obj, "Status")
	}
}

func (g generic) PrepareForUpdate(obj, old runtime.Object) {
	if g.hasStatus() {
		copyField(obj, old, "Status")
	}
}

func (generic) Canonicalize(runtime.Object)           {}
func (generic) Default(obj runtime.Object)            { defaults.Apply(obj) }
func (generic) DefaultUpdate(obj, old runtime.Object) { defaults.ApplyUpdate(obj, old) }

func (generic) Validate(obj runtime.Object) field.ErrorList { return validation.ValidateCreate(obj) }

func (generic) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validation.ValidateUpdate(obj, old)
}

func (generic) Allocate(context.Context, runtime.Object, runtime.Object) (func(), error) {
	return func() {}, nil
}

func (generic) Release(context.Context, runtime.Object, runtime.Object) {}
func (generic) CheckDelete(string) error                                { return nil }
func (generic) GracePeriod(runtime.Object, *metav1.DeleteOptions) int64 { return 0 }
func (generic) Finalizing(runtime.Object) bool                          { return false }
func (generic) GCPolicy() GCPolicy                                      { return DeleteDependents }
func (generic) MarkDeleting(runtime.Object)                             {}

func (generic) Fields(obj runtime.Object) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

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

// copyField sets dst.<name> to src.<name>.
func copyField(dst, src runtime.Object, name string) {
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

// specChanged reports whether the spec-like part of an object differs, which bumps generation.
func specChanged(newObj, oldObj runtime.Object) bool {
	for _, name := range specFields {
		n, ok1 := structField(newObj, name)
		o, ok2 := structField(oldObj, name)
		if ok1 && ok2 && !equality.Semantic.DeepEqual(n.Interface(), o.Interface()) {
			return true
		}
	}
	return false
}
