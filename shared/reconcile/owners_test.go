package reconcile

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
)

func TestAdoptRelease(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid"}}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	pods := fake.New(func() *corev1.Pod { return &corev1.Pod{} })
	pod := pods.Put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{other}}})

	adopted, err := Adopt(t.Context(), pods, pod, *metav1.NewControllerRef(rs, rsKind))
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	if len(adopted.OwnerReferences) != 2 || adopted.OwnerReferences[0] != other || OwnerKey(adopted, rsKind) != "ns/web" {
		t.Fatalf("owners after Adopt %+v, want the ConfigMap's and the ReplicaSet as controller", adopted.OwnerReferences)
	}
	if len(pod.OwnerReferences) != 1 {
		t.Errorf("Adopt changed the object it was given: %+v", pod.OwnerReferences)
	}

	// pod is now stale: its resourceVersion guards the patch.
	if _, err := Release(t.Context(), pods, pod, rs.UID); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("Release of a stale pod: %v, want Conflict", err)
	}
	replaced := adopted.DeepCopy()
	replaced.UID = "another"
	if _, err := Release(t.Context(), pods, replaced, rs.UID); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("Release naming another uid: %v, want Conflict", err)
	}
	released, err := Release(t.Context(), pods, adopted, rs.UID)
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	if len(released.OwnerReferences) != 1 || released.OwnerReferences[0] != other {
		t.Errorf("owners after Release %+v, want only the ConfigMap's", released.OwnerReferences)
	}
	if none, err := Release(t.Context(), pods, released, "cm-uid"); err != nil || len(none.OwnerReferences) != 0 {
		t.Errorf("Release of the last owner: %+v, %v; want none", none.OwnerReferences, err)
	}
}

func TestCachedOwnerKey(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "1"}}
	rss := staticInformer("replicasets", &appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{*rs}})
	go func() { _ = rss.Start(t.Context()) }()
	if !informer.WaitForSync(t.Context(), rss.HasSynced) {
		t.Fatal("cache did not sync")
	}
	lister := informer.NewLister[*appsv1.ReplicaSet](rss.Store())
	owned := func(uid string) *corev1.Pod {
		ref := *metav1.NewControllerRef(rs, rsKind)
		ref.UID = types.UID(uid)
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{ref}}}
	}
	if got := CachedOwnerKey(lister, owned("u1"), rsKind); got != "ns/web" {
		t.Errorf("owner in the cache: %q, want ns/web", got)
	}
	if got := CachedOwnerKey(lister, owned("u0"), rsKind); got != "" {
		t.Errorf("owner replaced by another of its name: %q, want none", got)
	}
	gone := rs.DeepCopy()
	gone.ResourceVersion = "2"
	if _, err := rss.Apply(watch.Deleted, gone); err != nil {
		t.Fatal(err)
	}
	if got := CachedOwnerKey(lister, owned("u1"), rsKind); got != "" {
		t.Errorf("owner gone from the cache: %q, want none", got)
	}
}
