// Package informertest holds what tests of informer users share: fixed sources for caches
// that show only what a test puts in them.
package informertest

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/informer"
)

// Fixed lists objs, copied, at the resourceVersion of the last of them ("0" when there are
// none), as the apiserver would list them, and refuses to watch: an informer over it (with
// NoWatch) holds objs and then only what the test applies.
func Fixed(objs ...runtime.Object) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "0"}}
			for _, o := range objs {
				if m, ok := o.(metav1.Object); ok && m.GetResourceVersion() != "" {
					list.ResourceVersion = m.GetResourceVersion()
				}
				list.Items = append(list.Items, runtime.RawExtension{Object: o.DeepCopyObject()})
			}
			return list, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch: a fixed list")
		},
	}
}
