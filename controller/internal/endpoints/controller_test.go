package endpoints

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
)

// TestReconcile follows one Service through the writes of its Endpoints: created with its
// ready pod, left alone when nothing changed, updated when the pod stops being ready, deleted
// (that very object) with the Service; a user's Endpoints of a deleted Service stays.
func TestReconcile(t *testing.T) {
	services := informer.New(informer.Config{Name: "services"})
	pods := informer.New(informer.Config{Name: "pods"})
	eps := informer.New(informer.Config{Name: "endpoints"})
	w := fake.New(func() *corev1.Endpoints { return &corev1.Endpoints{} })
	c := New(Config{ServiceInformer: services, PodInformer: pods, EndpointsInformer: eps, Endpoints: w})
	cache := func(inf *informer.Informer, event watch.EventType, obj runtime.Object) {
		t.Helper()
		if _, err := inf.Apply(event, obj); err != nil {
			t.Fatal(err)
		}
	}
	reconcile := func(key string) {
		t.Helper()
		if res, err := c.Reconcile(t.Context(), key); err != nil || res.RequeueAfter != 0 {
			t.Fatalf("reconcile %s: %v, requeue after %v", key, err, res.RequeueAfter)
		}
	}
	// stored brings the writer's object to the cache, as the bus would.
	stored := func() *corev1.Endpoints {
		t.Helper()
		ep, ok := w.Object("default", "web")
		if !ok {
			t.Fatal("no endpoints stored")
		}
		cache(eps, watch.Modified, ep)
		return ep
	}
	svc := service("web")
	svc.ResourceVersion = "1"
	p := pod("a", "10.0.0.1", true)
	p.ResourceVersion = "1"
	cache(services, watch.Added, svc)
	cache(pods, watch.Added, p)

	reconcile("default/web")
	ep := stored()
	want := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []corev1.EndpointPort{httpPort}}}
	if diff := cmp.Diff(want, ep.Subsets); diff != "" {
		t.Errorf("created subsets (-want +got):\n%s", diff)
	}

	reconcile("default/web")
	if n := len(w.Calls()); n != 1 {
		t.Errorf("nothing changed: want no write after the create, got %v", w.Calls()[1:])
	}

	notReady := pod("a", "10.0.0.1", false)
	notReady.ResourceVersion = "2"
	cache(pods, watch.Modified, notReady)
	reconcile("default/web")
	if calls := w.CallsOf(fake.VerbUpdate); len(calls) != 1 || calls[0].Object.(*corev1.Endpoints).ResourceVersion != ep.ResourceVersion {
		t.Fatalf("updates %v, want one from resourceVersion %s", calls, ep.ResourceVersion)
	}
	ep = stored()
	want = []corev1.EndpointSubset{{NotReadyAddresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []corev1.EndpointPort{httpPort}}}
	if diff := cmp.Diff(want, ep.Subsets); diff != "" {
		t.Errorf("updated subsets (-want +got):\n%s", diff)
	}

	cache(services, watch.Deleted, svc)
	reconcile("default/web")
	dels := w.CallsOf(fake.VerbDelete)
	if len(dels) != 1 || dels[0].Options.Preconditions == nil || *dels[0].Options.Preconditions.UID != ep.UID {
		t.Fatalf("deletes %v, want one with the uid %s as precondition", dels, ep.UID)
	}
	if _, ok := w.Object("default", "web"); ok {
		t.Error("the endpoints of the deleted service are still stored")
	}

	mine := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "manual", ResourceVersion: "9"}}
	cache(eps, watch.Added, w.Put(mine))
	reconcile("default/manual")
	if dels := w.CallsOf(fake.VerbDelete); len(dels) != 1 {
		t.Errorf("a user's endpoints were deleted: %v", dels[1:])
	}
}
