package backends

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Services finds the Services of a pod in a cache of Services indexed by namespace (every
// informer's store is): the selector match Kubernetes does, over the pod's namespace only.
type Services struct {
	Lister informer.Lister[*corev1.Service]
}

// Of returns the keys (namespace/name) of the Services that select pod.
func (s Services) Of(pod *corev1.Pod) []string {
	svcs, err := s.Lister.ListNamespace(pod.Namespace, nil)
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range svcs {
		if Matches(svc, pod) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

// Keys are the keys of every cached Service: what the Endpoints and EndpointSlice controllers
// revisit on each resync.
func (s Services) Keys() []string {
	svcs, _ := s.Lister.List(nil)
	keys := make([]string, 0, len(svcs))
	for _, svc := range svcs {
		keys = append(keys, Key(svc.Namespace, svc.Name))
	}
	return keys
}

// PodHandler returns informer handlers that queue on q the key of every Service a changed pod
// belongs to, before and after the change; updates that cannot change any endpoints (most
// kubelet status writes) queue nothing, but a resync (old == new) queues as always. It is a
// reconcile.EventHandler of the pods informer.
func (s Services) PodHandler(q reconcile.Queue) informer.Handler {
	each := func(pod *corev1.Pod) {
		for _, k := range s.Of(pod) {
			q.Add(k)
		}
	}
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if pod, ok := obj.(*corev1.Pod); ok {
				each(pod)
			}
		},
		UpdateFunc: func(oldObj, newObj runtime.Object) {
			old, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			sameLabels := labels.Equals(old.Labels, pod.Labels)
			if old != pod && sameLabels && RelevantOf(old) == RelevantOf(pod) {
				return
			}
			each(pod)
			if !sameLabels {
				each(old)
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			if pod, ok := informer.DeletedObject(obj).(*corev1.Pod); ok {
				each(pod)
			}
		},
	}
}

// Key is namespace/name of a namespaced object.
func Key(namespace, name string) string { return fmt.Sprintf("%s/%s", namespace, name) }
