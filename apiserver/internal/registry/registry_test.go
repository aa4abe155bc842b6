package registry

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage/memstore"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// newTestRegistry is a registry over an in-memory store, with the system namespaces made.
func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r := New(Config{Store: memstore.New()})
	if err := r.ns.ensureSystem(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

func resource(t *testing.T, name string) *scheme.Resource {
	t.Helper()
	res, err := scheme.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustCreate(t *testing.T, r *Registry, res *scheme.Resource, ns string, obj runtime.Object) runtime.Object {
	t.Helper()
	w, err := r.Create(t.Context(), Key{Resource: res, Namespace: ns}, obj, false)
	if err != nil {
		t.Fatal(err)
	}
	return w.Object
}

// Every namespace gets a default service account when it is made, and gets it back when it is
// deleted; pods run as it unless they name another.
func TestDefaultServiceAccount(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	sa := resource(t, "serviceaccounts")
	for _, ns := range SystemNamespaces {
		if _, err := r.Get(ctx, Key{Resource: sa, Namespace: ns, Name: DefaultServiceAccount}); err != nil {
			t.Fatalf("system namespace %s: %v", ns, err)
		}
	}
	mustCreate(t, r, resource(t, "namespaces"), "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	key := Key{Resource: sa, Namespace: "team", Name: DefaultServiceAccount}
	if _, err := r.Get(ctx, key); err != nil {
		t.Fatalf("new namespace has no default service account: %v", err)
	}
	if _, err := r.Delete(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	r.ns.pass(ctx)
	if _, err := r.Get(ctx, key); err != nil {
		t.Fatalf("deleted default service account not made again: %v", err)
	}

	for _, name := range []string{"builder", "old"} {
		mustCreate(t, r, sa, "team", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	pods := resource(t, "pods")
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
	cases := []struct {
		name string
		spec func(*corev1.PodSpec)
		want string
	}{
		{"unnamed", func(*corev1.PodSpec) {}, "default"},
		{"named", func(s *corev1.PodSpec) { s.ServiceAccountName = "builder" }, "builder"},
		{"deprecated field", func(s *corev1.PodSpec) { s.DeprecatedServiceAccount = "old" }, "old"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + RandomSuffix()}, Spec: *spec.DeepCopy()}
			tc.spec(&pod.Spec)
			got := mustCreate(t, r, pods, "team", pod).(*corev1.Pod)
			if got.Spec.ServiceAccountName != tc.want || got.Spec.DeprecatedServiceAccount != tc.want {
				t.Fatalf("serviceAccountName %q serviceAccount %q, want %q", got.Spec.ServiceAccountName, got.Spec.DeprecatedServiceAccount, tc.want)
			}
		})
	}
}

// A namespace being deleted empties, then goes; protected ones may not be deleted.
func TestNamespaceFinalization(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	nsRes, cm := resource(t, "namespaces"), resource(t, "configmaps")
	mustCreate(t, r, nsRes, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
	mustCreate(t, r, cm, "gone", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	out, err := r.Delete(ctx, Key{Resource: nsRes, Name: "gone"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ns := out.(*corev1.Namespace); ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("deleted namespace %+v", ns.Status)
	}
	if _, err := r.Create(ctx, Key{Resource: cm, Namespace: "gone"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, false); !errors.Is(err, apierror.ErrForbidden) {
		t.Fatalf("create in a terminating namespace: %v", err)
	}
	for range 3 {
		r.ns.pass(ctx)
	}
	if _, err := r.Get(ctx, Key{Resource: nsRes, Name: "gone"}); !errors.Is(err, apierror.ErrNotFound) {
		t.Fatalf("namespace still there: %v", err)
	}
	if _, err := r.Delete(ctx, Key{Resource: nsRes, Name: "kube-system"}, nil); !errors.Is(err, apierror.ErrForbidden) {
		t.Fatalf("deleting kube-system: %v", err)
	}
}

// Repair frees reservations nothing holds once they are old enough, never young ones (a
// create may be between reserving and writing), and restores missing reservations.
func TestAllocationRepair(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	store := r.store
	svc := mustCreate(t, r, resource(t, "services"), "default", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}).(*corev1.Service)
	ipKey := func(ip string) string { return "/minik8s/allocations/serviceips/" + ip }
	orphan := ipKey("10.100.200.1")
	if _, err := store.Create(ctx, orphan, []byte("gone/svc")); err != nil {
		t.Fatal(err)
	}
	// The service's own key goes missing.
	if _, _, err := store.Delete(ctx, ipKey(svc.Spec.ClusterIP), 0); err != nil {
		t.Fatal(err)
	}
	rev, err := r.repair(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, orphan); err != nil {
		t.Fatalf("a young orphan was freed: %v", err)
	}
	if kv, err := store.Get(ctx, ipKey(svc.Spec.ClusterIP)); err != nil || string(kv.Value) != "default/kept" {
		t.Fatalf("missing reservation not restored: %v %q", err, kv.Value)
	}
	young := ipKey("10.100.200.2")
	if _, err := store.Create(ctx, young, []byte("inflight/svc")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.repair(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, orphan); err == nil {
		t.Fatal("an old orphan survived repair")
	}
	if _, err := store.Get(ctx, young); err != nil {
		t.Fatalf("a reservation younger than the last repair was freed: %v", err)
	}
}

// Each strategy's field set names what Kubernetes lets field selectors use for the kind.
func TestFieldSelectorsPerKind(t *testing.T) {
	r := newTestRegistry(t)
	cases := []struct {
		plural string
		want   []string
	}{
		{"configmaps", []string{"metadata.name", "metadata.namespace"}},
		{"pods", []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "status.nominatedNodeName", "status.phase", "status.podIP"}},
		{"nodes", []string{"metadata.name", "metadata.namespace", "spec.unschedulable"}},
		{"secrets", []string{"metadata.name", "metadata.namespace", "type"}},
		{"namespaces", []string{"metadata.name", "metadata.namespace", "status.phase"}},
	}
	for _, tc := range cases {
		t.Run(tc.plural, func(t *testing.T) {
			res := resource(t, tc.plural)
			var got []string
			for f := range r.strategy(res).Fields(res.New()) {
				got = append(got, f)
			}
			if diff := cmp.Diff(tc.want, got, cmpSorted); diff != "" {
				t.Fatalf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })
