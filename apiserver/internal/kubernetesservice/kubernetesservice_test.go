package kubernetesservice

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/apiserver/internal/storage/memstore"
	"minik8s.io/shared/scheme"
)

func newRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	r := registry.New(registry.Config{Store: memstore.New()})
	res, _ := scheme.Lookup("namespaces")
	for _, ns := range []string{"default", "kube-system"} {
		if _, err := r.Create(t.Context(), registry.Key{Resource: res}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, false); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func read[T any](t *testing.T, r *registry.Registry, plural string) T {
	t.Helper()
	res, _ := scheme.Lookup(plural)
	obj, _, err := r.Read(t.Context(), registry.Key{Resource: res, Namespace: Namespace, Name: Name})
	if err != nil {
		t.Fatalf("read %s: %v", plural, err)
	}
	return obj.(T)
}

func ips(eps *corev1.Endpoints) []string {
	var out []string
	for _, s := range eps.Subsets {
		for _, a := range s.Addresses {
			out = append(out, a.IP)
		}
	}
	return out
}

// Two apiservers each add themselves; one that leaves is dropped at once, and one that stops
// renewing is dropped once its lease runs out.
func TestApiserversShareTheService(t *testing.T) {
	r := newRegistry(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	vip := netip.MustParseAddr("10.96.0.1")
	a := New(Config{Registry: r, Endpoint: netip.MustParseAddrPort("192.168.1.10:6443"), ClusterIP: vip, Now: clock})
	b := New(Config{Registry: r, Endpoint: netip.MustParseAddrPort("192.168.1.11:6443"), ClusterIP: vip, Now: clock})
	ctx := t.Context()

	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	svc := read[*corev1.Service](t, r, "services")
	if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].Name != "https" || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 {
		t.Fatalf("service spec = %+v", svc.Spec)
	}
	if got := ips(read[*corev1.Endpoints](t, r, "endpoints")); !cmp.Equal(got, []string{"192.168.1.10"}) {
		t.Fatalf("endpoints after the first apiserver = %v", got)
	}

	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ips(read[*corev1.Endpoints](t, r, "endpoints")); !cmp.Equal(got, []string{"192.168.1.10", "192.168.1.11"}) {
		t.Fatalf("endpoints after the second apiserver = %v", got)
	}
	slice := read[*discoveryv1.EndpointSlice](t, r, "endpointslices")
	if len(slice.Endpoints) != 2 || slice.Labels[discoveryv1.LabelServiceName] != Name || *slice.Ports[0].Port != 6443 {
		t.Fatalf("slice = %+v", slice)
	}

	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ips(read[*corev1.Endpoints](t, r, "endpoints")); !cmp.Equal(got, []string{"192.168.1.10"}) {
		t.Fatalf("endpoints after the second left = %v", got)
	}

	// b comes back, then stops renewing: a, still renewing, drops it when its lease runs out.
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultLeaseDuration + time.Second)
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ips(read[*corev1.Endpoints](t, r, "endpoints")); !cmp.Equal(got, []string{"192.168.1.10"}) {
		t.Fatalf("endpoints after the second stopped renewing = %v", got)
	}
}

// Someone edits the Service's ports: the next pass puts them back.
func TestServicePortsRestored(t *testing.T) {
	r := newRegistry(t)
	rec := New(Config{Registry: r, Endpoint: netip.MustParseAddrPort("192.168.1.10:6443"), ClusterIP: netip.MustParseAddr("10.96.0.1")})
	if err := rec.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, _ := scheme.Lookup("services")
	svc := read[*corev1.Service](t, r, "services")
	svc.Spec.Ports[0].Port = 8443
	if _, err := r.Update(t.Context(), registry.Key{Resource: res, Namespace: Namespace, Name: Name}, registry.UpdateOptions{},
		func(_ runtime.Object, _ storage.KV) (runtime.Object, string, error) { return svc, "", nil }); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := read[*corev1.Service](t, r, "services").Spec.Ports[0].Port; got != Port {
		t.Fatalf("port after a pass = %d, want %d", got, Port)
	}
}

func TestLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lease := func(endpoint string, renewedAgo time.Duration, secs int32) *coordinationv1.Lease {
		renew := metav1.NewMicroTime(now.Add(-renewedAgo))
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{EndpointAnnotation: endpoint}},
			Spec: coordinationv1.LeaseSpec{RenewTime: &renew, LeaseDurationSeconds: &secs}}
	}
	tests := []struct {
		name   string
		leases []*coordinationv1.Lease
		want   []string
	}{
		{"current ones sorted", []*coordinationv1.Lease{lease("10.0.0.2:6443", 0, 40), lease("10.0.0.1:6443", 39*time.Second, 40)}, []string{"10.0.0.1:6443", "10.0.0.2:6443"}},
		{"expired dropped", []*coordinationv1.Lease{lease("10.0.0.2:6443", 40*time.Second, 40), lease("10.0.0.1:6443", 0, 40)}, []string{"10.0.0.1:6443"}},
		{"loopback and garbage dropped", []*coordinationv1.Lease{lease("127.0.0.1:6443", 0, 40), lease("nonsense", 0, 40), lease("0.0.0.0:6443", 0, 40)}, nil},
		{"duplicates once", []*coordinationv1.Lease{lease("10.0.0.1:6443", 0, 40), lease("10.0.0.1:6443", 0, 40)}, []string{"10.0.0.1:6443"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, ap := range Live(tc.leases, now) {
				got = append(got, ap.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("live (-want +got):\n%s", diff)
			}
		})
	}
}
