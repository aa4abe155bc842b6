package reconcile

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/testwait"
)

// ChildPods observes an owned pod's creation and deletion on its owner's expectations and
// wakes the owner; an orphan wakes the owners that may adopt it.
func TestChildPods(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "1"}}
	rss := staticInformer("replicasets", &appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{*rs}})
	pods := staticInformer("pods", &corev1.PodList{})
	var exp Expectations
	var reconciled keyLog
	child := &ChildPods{Expectations: &exp, Clock: Options{}.WithDefaults().Clock,
		Owner:     func(obj runtime.Object) string { return OwnerKey(obj, rsKind) },
		Selecting: func(p *corev1.Pod) []string { return []string{"ns/adopter-of-" + p.Name} },
		Counts:    func(old, pod *corev1.Pod) bool { return old.Spec.NodeName != pod.Spec.NodeName },
	}
	ctl := NewController("test", Options{Workers: 1, Resync: time.Hour}).
		For(rss).
		Watches(pods, child.Events).
		Complete(ReconcilerFunc(func(_ context.Context, key string) (Result, error) {
			reconciled.add(key)
			return Result{}, nil
		}))
	child.Controller = ctl
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 3)
	for _, r := range []interface{ Start(context.Context) error }{rss, pods, ctl} {
		go func() { done <- r.Start(ctx) }()
	}
	defer func() {
		cancel()
		for range 3 {
			<-done
		}
	}()
	testwait.For(t, "the cached ReplicaSet reconciled", func() bool { return reconciled.has("ns/web") })

	exp.ExpectCreations("ns/web", 1, time.Now())
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", ResourceVersion: "2",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}}}
	if _, err := pods.Apply(watch.Added, owned); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the creation observed and the owner woken", func() bool {
		adds, _ := exp.Pending("ns/web")
		return adds == 0 && reconciled.count("ns/web") >= 2
	})

	exp.ExpectDeletions("ns/web", []string{"ns/web-1"}, time.Now())
	terminating := owned.DeepCopy()
	terminating.ResourceVersion = "3"
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := pods.Apply(watch.Modified, terminating); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "a terminating pod counted as deleted", func() bool {
		_, dels := exp.Pending("ns/web")
		return dels == 0
	})

	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", ResourceVersion: "4"}}
	if _, err := pods.Apply(watch.Added, orphan); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the orphan's possible adopters queued", func() bool { return reconciled.has("ns/adopter-of-orphan") })
}
