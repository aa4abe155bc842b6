package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// Verbs a Call records.
const (
	VerbGet          = "get"
	VerbCreate       = "create"
	VerbUpdate       = "update"
	VerbUpdateStatus = "update-status"
	VerbPatch        = "patch"
	VerbDelete       = "delete"
)

// Call is one call made to a Writer.
type Call struct {
	Verb            string
	Namespace, Name string
	// Object is what was sent (create, update) or the result (patch); nil for get and delete.
	Object runtime.Object
	// Patch is the patch sent, Options the delete's options.
	Patch   []byte
	Options *metav1.DeleteOptions
}

// Writer is an in-memory client.Writer of one kind. The zero value is not usable; call New.
type Writer[T runtime.Object] struct {
	newObj func() T

	mu       sync.Mutex
	objects  map[string]T
	version  uint64
	uids     int
	calls    []Call
	failNext map[string][]error
}

var _ client.Writer[*metav1.PartialObjectMetadata] = (*Writer[*metav1.PartialObjectMetadata])(nil)

// New returns an empty writer; newObj makes an empty object of the kind (for patches).
func New[T runtime.Object](newObj func() T, objects ...T) *Writer[T] {
	w := &Writer[T]{newObj: newObj, objects: map[string]T{}, failNext: map[string][]error{}}
	for _, o := range objects {
		w.Put(o)
	}
	return w
}

func key(namespace, name string) string { return namespace + "/" + name }

func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("fake: %T has no object metadata: %v", obj, err))
	}
	return m
}

func clone[T runtime.Object](obj T) T { return obj.DeepCopyObject().(T) }

// Put stores obj as it is, with the next resourceVersion, as if someone else wrote it.
func (w *Writer[T]) Put(obj T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.storeLocked(clone(obj))
}

func (w *Writer[T]) storeLocked(obj T) T {
	m := accessor(obj)
	w.version++
	m.SetResourceVersion(strconv.FormatUint(w.version, 10))
	if m.GetUID() == "" {
		w.uids++
		m.SetUID(types.UID(fmt.Sprintf("uid-%d", w.uids)))
	}
	w.objects[key(m.GetNamespace(), m.GetName())] = obj
	return clone(obj)
}

// Object returns the stored object, if any.
func (w *Writer[T]) Object(namespace, name string) (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.objects[key(namespace, name)]
	if !ok {
		var zero T
		return zero, false
	}
	return clone(o), true
}

// Objects returns every stored object, ordered by namespace and name.
func (w *Writer[T]) Objects() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.objects))
	for k := range w.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, clone(w.objects[k]))
	}
	return out
}

// Calls returns the calls made so far, oldest first.
func (w *Writer[T]) Calls() []Call {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

// CallsOf returns the calls of one verb.
func (w *Writer[T]) CallsOf(verb string) []Call {
	var out []Call
	for _, c := range w.Calls() {
		if c.Verb == verb {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls forgets the calls made so far.
func (w *Writer[T]) ResetCalls() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = nil
}

// FailNext makes the next call of verb fail with err, doing nothing; calls queue up.
func (w *Writer[T]) FailNext(verb string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failNext[verb] = append(w.failNext[verb], err)
}

func (w *Writer[T]) recordLocked(c Call) error {
	w.calls = append(w.calls, c)
	if errs := w.failNext[c.Verb]; len(errs) > 0 {
		w.failNext[c.Verb] = errs[1:]
		return errs[0]
	}
	return nil
}

func notFound(namespace, name string) error {
	return apierror.New(apierror.ErrNotFound, "%q not found", key(namespace, name))
}

// Get implements client.Writer.
func (w *Writer[T]) Get(_ context.Context, namespace, name string, _ metav1.GetOptions) (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	if err := w.recordLocked(Call{Verb: VerbGet, Namespace: namespace, Name: name}); err != nil {
		return zero, err
	}
	o, ok := w.objects[key(namespace, name)]
	if !ok {
		return zero, notFound(namespace, name)
	}
	return clone(o), nil
}

// Create implements client.Writer; generateName gets a numbered suffix.
func (w *Writer[T]) Create(_ context.Context, obj T, _ metav1.CreateOptions) (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	obj = clone(obj)
	m := accessor(obj)
	if err := w.recordLocked(Call{Verb: VerbCreate, Namespace: m.GetNamespace(), Name: m.GetName(), Object: clone(obj)}); err != nil {
		return zero, err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), w.version+1))
	}
	if _, ok := w.objects[key(m.GetNamespace(), m.GetName())]; ok {
		return zero, apierror.New(apierror.ErrAlreadyExists, "%q already exists", key(m.GetNamespace(), m.GetName()))
	}
	m.SetUID("")
	return w.storeLocked(obj), nil
}

// Update implements client.Writer: a resourceVersion that is not the stored one is a Conflict.
func (w *Writer[T]) Update(_ context.Context, obj T, _ metav1.UpdateOptions) (T, error) {
	return w.update(VerbUpdate, obj)
}

// UpdateStatus implements client.Writer as Update does.
func (w *Writer[T]) UpdateStatus(_ context.Context, obj T, _ metav1.UpdateOptions) (T, error) {
	return w.update(VerbUpdateStatus, obj)
}

func (w *Writer[T]) update(verb string, obj T) (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	obj = clone(obj)
	m := accessor(obj)
	if err := w.recordLocked(Call{Verb: verb, Namespace: m.GetNamespace(), Name: m.GetName(), Object: clone(obj)}); err != nil {
		return zero, err
	}
	cur, ok := w.objects[key(m.GetNamespace(), m.GetName())]
	if !ok {
		return zero, notFound(m.GetNamespace(), m.GetName())
	}
	cm := accessor(cur)
	if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return zero, conflict(m.GetNamespace(), m.GetName())
	}
	m.SetUID(cm.GetUID())
	return w.storeLocked(obj), nil
}

func conflict(namespace, name string) error {
	return apierror.New(apierror.ErrConflict, "Operation cannot be fulfilled on %q: the object has been modified; please apply your changes to the latest version and try again", key(namespace, name))
}

// Patch implements client.Writer for JSON merge patches, whose metadata.uid and
// metadata.resourceVersion, when set, are preconditions as in the apiserver.
func (w *Writer[T]) Patch(_ context.Context, namespace, name string, pt types.PatchType, data []byte, _ ...string) (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	call := Call{Verb: VerbPatch, Namespace: namespace, Name: name, Patch: slices.Clone(data)}
	if err := w.recordLocked(call); err != nil {
		return zero, err
	}
	if pt != types.MergePatchType {
		return zero, apierror.New(apierror.ErrUnsupportedMediaType, "fake: only merge patches, not %s", pt)
	}
	cur, ok := w.objects[key(namespace, name)]
	if !ok {
		return zero, notFound(namespace, name)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return zero, apierror.New(apierror.ErrBadRequest, "patch: %v", err)
	}
	cm := accessor(cur)
	if md, ok := patch["metadata"].(map[string]any); ok {
		if uid, ok := md["uid"].(string); ok && uid != string(cm.GetUID()) {
			return zero, conflict(namespace, name)
		}
		if rv, ok := md["resourceVersion"].(string); ok && rv != cm.GetResourceVersion() {
			return zero, conflict(namespace, name)
		}
	}
	raw, err := json.Marshal(cur)
	if err != nil {
		return zero, err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return zero, err
	}
	merged, err := json.Marshal(MergePatch(doc, patch))
	if err != nil {
		return zero, err
	}
	out := w.newObj()
	if err := json.Unmarshal(merged, out); err != nil {
		return zero, apierror.New(apierror.ErrBadRequest, "patch: %v", err)
	}
	stored := w.storeLocked(out)
	w.calls[len(w.calls)-1].Object = clone(stored)
	return stored, nil
}

// MergePatch applies an RFC 7386 JSON merge patch to doc: objects merge, null removes, and
// anything else replaces.
func MergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = MergePatch(d[k], v)
	}
	return d
}

// Delete implements client.Writer, honouring the uid and resourceVersion preconditions.
func (w *Writer[T]) Delete(_ context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := opts
	if err := w.recordLocked(Call{Verb: VerbDelete, Namespace: namespace, Name: name, Options: &o}); err != nil {
		return err
	}
	cur, ok := w.objects[key(namespace, name)]
	if !ok {
		return notFound(namespace, name)
	}
	if pre := opts.Preconditions; pre != nil {
		cm := accessor(cur)
		if (pre.UID != nil && *pre.UID != cm.GetUID()) || (pre.ResourceVersion != nil && *pre.ResourceVersion != cm.GetResourceVersion()) {
			return conflict(namespace, name)
		}
	}
	delete(w.objects, key(namespace, name))
	return nil
}
