package reconcile

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/testwait"
)

// staticInformer is an informer in bus mode over a fixed list: changes come through Apply.
func staticInformer(name string, list runtime.Object) *informer.Informer {
	return informer.New(informer.Config{Name: name, NoWatch: true, ListerWatcher: informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil },
	}})
}

// keyLog records the keys reconciled.
type keyLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *keyLog) add(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, k)
}

func (l *keyLog) has(k string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.keys, k)
}

func (l *keyLog) count(k string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.keys {
		if x == k {
			n++
		}
	}
	return n
}

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func TestBuilder(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "1"}}
	rss := staticInformer("replicasets", &appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{*rs}})
	pods := staticInformer("pods", &corev1.PodList{})
	services := staticInformer("services", &corev1.ServiceList{})

	var reconciled keyLog
	var deleted keyLog
	requeued := false
	var mu sync.Mutex
	ctl := NewController("test", Options{Workers: 2, Resync: time.Hour}).
		For(rss, deleted.add).
		Owns(pods, rsKind).
		Map(services, func(obj runtime.Object) []string { return []string{"ns/mapped-" + obj.(*corev1.Service).Name} }).
		Complete(ReconcilerFunc(func(_ context.Context, key string) (Result, error) {
			reconciled.add(key)
			mu.Lock()
			defer mu.Unlock()
			if key == "ns/again" && !requeued {
				requeued = true
				return Result{RequeueAfter: 10 * time.Millisecond}, nil
			}
			return Result{}, nil
		}))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 4)
	for _, r := range []interface{ Start(context.Context) error }{rss, pods, services, ctl} {
		go func() { done <- r.Start(ctx) }()
	}
	defer func() {
		cancel()
		for range 4 {
			<-done
		}
	}()

	// The resync at start queues every ReplicaSet in the cache.
	testwait.For(t, "the cached ReplicaSet reconciled", func() bool { return reconciled.has("ns/web") })

	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", ResourceVersion: "2",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}}}
	owned.OwnerReferences[0].Name = "owner"
	if _, err := pods.Apply(watch.Added, owned); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the pod's owner reconciled", func() bool { return reconciled.has("ns/owner") })

	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", ResourceVersion: "3"}}
	if _, err := pods.Apply(watch.Added, orphan); err != nil {
		t.Fatal(err)
	}

	if _, err := services.Apply(watch.Added, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", ResourceVersion: "4"}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the mapped key reconciled", func() bool { return reconciled.has("ns/mapped-svc") })

	again := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "again", ResourceVersion: "5"}}
	if _, err := rss.Apply(watch.Added, again); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "RequeueAfter reconciling the key again", func() bool { return reconciled.count("ns/again") >= 2 })

	gone := rs.DeepCopy()
	gone.ResourceVersion = "6"
	if _, err := rss.Apply(watch.Deleted, gone); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the deleted ReplicaSet's key passed to onDelete", func() bool { return deleted.has("ns/web") })
	testwait.For(t, "the deleted ReplicaSet reconciled", func() bool { return reconciled.count("ns/web") >= 2 })

	for _, k := range []string{"ns/orphan", "ns/web-1", "ns/svc"} {
		if reconciled.has(k) {
			t.Errorf("reconciled %q, which no handler maps to", k)
		}
	}
}

func TestOwnerKey(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	ref := metav1.NewControllerRef(rs, rsKind)
	notController := *ref
	no := false
	notController.Controller = &no
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want string
	}{
		{"controller of the kind", []metav1.OwnerReference{*ref}, "ns/web"},
		{"owner but not controller", []metav1.OwnerReference{notController}, ""},
		{"controller of another kind", []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("Deployment"))}, ""},
		{"no owner", nil, ""},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: tc.refs}}
		if got := OwnerKey(pod, rsKind); got != tc.want {
			t.Errorf("%s: OwnerKey = %q, want %q", tc.name, got, tc.want)
		}
	}
}
