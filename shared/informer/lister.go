package informer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
)

// Lister reads typed objects from a Store. T is the pointer type the ListerWatcher lists, such
// as *corev1.Pod. Returned objects are the cache's own: deep-copy before mutating.
type Lister[T runtime.Object] struct {
	store *Store
}

// NewLister returns a typed view of store.
func NewLister[T runtime.Object](store *Store) Lister[T] { return Lister[T]{store: store} }

// Get returns the object namespace/name (namespace "" for cluster-scoped kinds). A missing
// object is an error matching apierror.ErrNotFound.
func (l Lister[T]) Get(namespace, name string) (T, error) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	var zero T
	obj, ok := l.store.Get(key)
	if !ok {
		return zero, apierror.New(apierror.ErrNotFound, "%q not found in cache", key)
	}
	return l.cast(obj)
}

// List returns the objects in every namespace whose labels match selector (nil matches all).
func (l Lister[T]) List(selector labels.Selector) ([]T, error) {
	return l.filter(l.store.List(), selector)
}

// ListNamespace returns the objects in namespace whose labels match selector.
func (l Lister[T]) ListNamespace(namespace string, selector labels.Selector) ([]T, error) {
	objs, err := l.store.ByIndex(NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	return l.filter(objs, selector)
}

// ByIndex returns the objects filed under value in the named index.
func (l Lister[T]) ByIndex(index, value string) ([]T, error) {
	objs, err := l.store.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	return l.filter(objs, nil)
}

func (l Lister[T]) filter(objs []runtime.Object, selector labels.Selector) ([]T, error) {
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if selector != nil && !selector.Empty() {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, fmt.Errorf("list: %w", err)
			}
			if !selector.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		t, err := l.cast(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (l Lister[T]) cast(obj runtime.Object) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("cache holds %T, lister wants %T", obj, zero)
	}
	return t, nil
}
