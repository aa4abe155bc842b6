package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/workqueue/clock"
)

// ChildPods are the pod event handlers of a controller that makes pods against expectations
// (ReplicaSets, ReplicationControllers, DaemonSets), as Kubernetes' controllers handle them:
// a pod's creation or deletion (terminating counts as gone) is observed on its owner's
// expectations and wakes the owner; a change of an owned pod that bears on the owner's next
// decision wakes it, any other (readiness, status) queues it after SettleDelay, gathering the
// changes of many pods into one sync; an orphan whose labels or controller changed queues the
// owners that may adopt it. Set Controller once the controller is built; the handlers run only
// after that, once the informers start.
type ChildPods struct {
	Controller   *Controller
	Expectations *Expectations
	Clock        clock.Clock
	// Owner is the key of the pod's controller when it is one of this controller's objects in
	// the cache, "" otherwise.
	Owner func(obj runtime.Object) string
	// Selecting are the keys of the objects whose selector matches an orphan pod.
	Selecting func(pod *corev1.Pod) []string
	// Counts reports whether a change of an owned pod bears on its owner's next decision.
	Counts func(old, pod *corev1.Pod) bool
}

// Events is the EventHandler for Watches on the pod informer.
func (c *ChildPods) Events(Queue) informer.Handler {
	return informer.HandlerFuncs{AddFunc: c.added, UpdateFunc: c.updated, DeleteFunc: c.deleted}
}

func (c *ChildPods) added(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (after a relist): a deletion.
		c.deleted(pod)
		return
	}
	if key := c.Owner(pod); key != "" {
		c.Expectations.CreationObserved(key)
		c.Controller.Wake(key, c.Expectations, c.Clock.Now())
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil {
		c.adopters(pod)
	}
}

func (c *ChildPods) updated(oldObj, newObj runtime.Object) {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == pod.ResourceVersion {
		return
	}
	owner := c.Owner(pod)
	if pod.DeletionTimestamp != nil && old.DeletionTimestamp == nil && owner != "" {
		// Terminating counts as gone: the replacement starts now.
		c.Expectations.DeletionObserved(owner, pod.Namespace+"/"+pod.Name)
	}
	if oldOwner := c.Owner(old); oldOwner != "" && oldOwner != owner {
		c.Controller.Add(oldOwner)
	}
	if owner != "" {
		if c.Counts(old, pod) {
			c.Controller.Wake(owner, c.Expectations, c.Clock.Now())
		} else {
			c.Controller.AddAfter(owner, SettleDelay)
		}
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil && (!labels.Equals(old.Labels, pod.Labels) || metav1.GetControllerOfNoCopy(old) != nil) {
		c.adopters(pod)
	}
}

func (c *ChildPods) deleted(obj runtime.Object) {
	pod, ok := informer.DeletedObject(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if key := c.Owner(pod); key != "" {
		c.Expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
		c.Controller.Wake(key, c.Expectations, c.Clock.Now())
	}
}

func (c *ChildPods) adopters(pod *corev1.Pod) {
	for _, key := range c.Selecting(pod) {
		c.Controller.Add(key)
	}
}
