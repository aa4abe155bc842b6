package rootcacert

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
)

// TestReconcile follows one namespace: the ConfigMap is published, left alone, reset when
// changed, published again when deleted, and not written once the namespace terminates; a
// ConfigMap the cache has not seen yet is no error.
func TestReconcile(t *testing.T) {
	nsInf := informer.New(informer.Config{Name: "namespaces"})
	cmInf := informer.New(informer.Config{Name: "configmaps"})
	w := fake.New(func() *corev1.ConfigMap { return &corev1.ConfigMap{} })
	c := New(Config{NamespaceInformer: nsInf, ConfigMapInformer: cmInf, ConfigMaps: w, RootCA: []byte(ca)})
	cache := func(inf *informer.Informer, event watch.EventType, obj runtime.Object) {
		t.Helper()
		if _, err := inf.Apply(event, obj); err != nil {
			t.Fatal(err)
		}
	}
	reconcile := func() {
		t.Helper()
		if res, err := c.Reconcile(t.Context(), "dev"); err != nil || res.RequeueAfter != 0 {
			t.Fatalf("reconcile: %v, requeue after %v", err, res.RequeueAfter)
		}
	}
	// stored brings the writer's ConfigMap to the cache, as the bus would, and checks it.
	stored := func(event watch.EventType) *corev1.ConfigMap {
		t.Helper()
		cm, ok := w.Object("dev", ConfigMapName)
		if !ok {
			t.Fatal("no configmap stored")
		}
		cache(cmInf, event, cm)
		if diff := cmp.Diff(published("dev").Data, cm.Data); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
		if cm.Annotations[DescriptionAnnotation] != Description {
			t.Errorf("description %q", cm.Annotations[DescriptionAnnotation])
		}
		return cm
	}
	ns := namespace("dev", corev1.NamespaceActive)
	cache(nsInf, watch.Added, ns)

	reconcile()
	cm := stored(watch.Added)
	reconcile()
	if n := len(w.Calls()); n != 1 {
		t.Errorf("nothing changed: %d calls, want the create alone", n)
	}

	changed := cm.DeepCopy()
	changed.Data[DataKey] = "forged"
	changed = w.Put(changed)
	cache(cmInf, watch.Modified, changed)
	reconcile()
	if calls := w.CallsOf(fake.VerbUpdate); len(calls) != 1 || calls[0].Object.(*corev1.ConfigMap).ResourceVersion != changed.ResourceVersion {
		t.Fatalf("updates %v, want one from resourceVersion %s", calls, changed.ResourceVersion)
	}
	cm = stored(watch.Modified)

	// Deleted, and the cache saw it: published again.
	if err := w.Delete(t.Context(), "dev", ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cache(cmInf, watch.Deleted, cm)
	reconcile()
	cm = stored(watch.Added)

	// Deleted and made again by someone else before the cache saw either: the create finds
	// it there, which is no error; the cache's event brings the namespace back.
	cache(cmInf, watch.Deleted, cm)
	reconcile()
	if n := len(w.CallsOf(fake.VerbCreate)); n != 3 {
		t.Errorf("%d creates, want 3", n)
	}

	w.ResetCalls()
	terminating := ns.DeepCopy()
	terminating.Status.Phase = corev1.NamespaceTerminating
	cache(nsInf, watch.Modified, terminating)
	cache(cmInf, watch.Deleted, cm)
	reconcile()
	if calls := w.Calls(); len(calls) != 0 {
		t.Errorf("a terminating namespace: calls %v, want none", calls)
	}

	// A failing write is returned, to be retried.
	cache(nsInf, watch.Modified, ns)
	w.FailNext(fake.VerbCreate, apierror.New(apierror.ErrForbidden, "no"))
	if _, err := c.Reconcile(t.Context(), "dev"); !errors.Is(err, apierror.ErrForbidden) {
		t.Errorf("err = %v, want the Forbidden", err)
	}
}
