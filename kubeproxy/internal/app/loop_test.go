package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/kubeproxy/internal/clusterdns"
	"minik8s.io/kubeproxy/internal/netfilter/fake"
	"minik8s.io/kubeproxy/internal/proxier"
	"minik8s.io/kubeproxy/internal/rules"
	"minik8s.io/shared/informer"
)

func ptr[T any](v T) *T { return &v }

// listOnly serves one list and no watch (the bus feeds the informers).
func listOnly(list runtime.Object) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil },
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewEmptyWatch(), nil
		},
	}
}

type zoneRecorder struct {
	mu   sync.Mutex
	zone *clusterdns.Zone
}

func (z *zoneRecorder) SetZone(zone *clusterdns.Zone) { z.mu.Lock(); z.zone = zone; z.mu.Unlock() }

func (z *zoneRecorder) ask(name string) string {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.zone == nil {
		return ""
	}
	resp, _ := z.zone.Answer(new(dns.Msg).SetQuestion(name, dns.TypeA))
	if resp == nil || len(resp.Answer) == 0 {
		return ""
	}
	return resp.Answer[0].(*dns.A).A.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func webSlice(rv, ip string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", ResourceVersion: rv,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}}},
	}
}

// TestLoop feeds the caches a Service, its slice and an Ingress, and checks that the rules,
// the DNS zone and the hosts file follow, first from the lists and then from a bus event.
func TestLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	svcList := &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "1"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}}}
	sliceList := &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []discoveryv1.EndpointSlice{*webSlice("1", "10.244.1.2")}}
	ingList := &networkingv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []networkingv1.Ingress{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop", ResourceVersion: "1"},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com"}}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "10.96.0.80"}}}},
	}}}
	log := slog.New(slog.DiscardHandler)
	mk := func(name string, list runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: listOnly(list), NoWatch: true, RelistPeriod: time.Hour, Logger: log})
	}
	services, slices, ingresses := mk("services", svcList), mk("endpointslices", sliceList), mk("ingresses", ingList)
	tables := fake.New()
	zones := &zoneRecorder{}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLoop(loop{services: services, slices: slices, ingresses: ingresses,
		proxier: proxier.New(proxier.Config{Tables: tables, Options: rules.Options{Balance: rules.Random}, Logger: log}),
		dns:     zones, domain: "cluster.local", hostsFile: hosts, period: time.Hour, log: log})
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{services, slices, ingresses, l} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	restored := func(s string) func() bool {
		return func() bool {
			for _, p := range tables.Restores() {
				if strings.Contains(string(p), s) {
					return true
				}
			}
			return false
		}
	}
	eventually(t, "the endpoint's DNAT rule", restored("--to-destination 10.244.1.2:8080"))
	eventually(t, "the Service in DNS", func() bool { return zones.ask("web.default.svc.cluster.local.") == "10.96.0.10" })
	eventually(t, "the Ingress host in DNS", func() bool { return zones.ask("shop.example.com.") == "10.96.0.80" })
	eventually(t, "the hosts file block", func() bool {
		b, _ := os.ReadFile(hosts)
		return strings.Contains(string(b), "10.96.0.80\tshop.example.com\n")
	})
	if diff := cmp.Diff(jumpChains(), ensuredChains(tables)); diff != "" {
		t.Errorf("built-in chains whose jumps were ensured (-want +got):\n%s", diff)
	}

	// A bus event moves the endpoint.
	if _, err := slices.Apply(watch.Modified, webSlice("2", "10.244.2.7")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the moved endpoint's DNAT rule", restored("--to-destination 10.244.2.7:8080"))
	last := tables.Restores()[len(tables.Restores())-1]
	if strings.Contains(string(last), rules.ChainPostrouting) {
		t.Errorf("an endpoint change rewrote unrelated chains:\n%s", last)
	}
}

// jumpChains lists the built-in chains that hold our jumps, each once, as "table/chain".
func jumpChains() []string {
	var out []string
	for _, j := range rules.Jumps() {
		if c := j.Table + "/" + j.Chain; !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// ensuredChains lists the chains of the fake's EnsureFirst calls so far, oldest first.
func ensuredChains(tables *fake.Tables) []string {
	var out []string
	for _, c := range tables.Ensures() {
		out = append(out, c.Table+"/"+c.Chain)
	}
	return out
}

// TestLoopPutsJumpsBackFirst: a rule inserted above our jumps in FORWARD after the first sync
// (the CNI firewall plugin's, when the node's first pod starts) is moved below them by the
// check on the next tick of the sync period.
func TestLoopPutsJumpsBackFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	mk := func(name string, list runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: listOnly(list), NoWatch: true, RelistPeriod: time.Hour, Logger: log})
	}
	services := mk("services", &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
	epSlices := mk("endpointslices", &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
	ingresses := mk("ingresses", &networkingv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
	tables := fake.New()
	l := newLoop(loop{services: services, slices: epSlices, ingresses: ingresses,
		proxier: proxier.New(proxier.Config{Tables: tables, Options: rules.Options{Balance: rules.Random}, Logger: log}),
		dns:     &zoneRecorder{}, domain: "cluster.local", period: 50 * time.Millisecond, log: log})
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{services, epSlices, ingresses, l} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	var ours []string
	for _, j := range rules.Jumps() {
		if j.Table == "filter" && j.Chain == "FORWARD" {
			ours = append(ours, fake.RuleLine("FORWARD", j.Rule...))
		}
	}
	forward := func() []string { return tables.Rules("filter", "FORWARD") }
	eventually(t, "our jumps in FORWARD", func() bool { return cmp.Equal(ours, forward()) })
	cni := `-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD`
	payload := "*filter\n:CNI-FORWARD - [0:0]\n-I" + strings.TrimPrefix(cni, "-A") + "\nCOMMIT\n"
	if err := tables.Restore(t.Context(), []byte(payload)); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clip(ours), cni)
	eventually(t, "our jumps first again", func() bool { return cmp.Equal(want, forward()) })
}
