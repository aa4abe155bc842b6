package catalog

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func endpoint(ip string, ready, serving, terminating *bool, hostname string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
	if hostname != "" {
		e.Hostname = ptr(hostname)
	}
	return e
}

func epSlice(name string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(port)}},
		Endpoints:   eps,
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestPortEndpointsAndUsable(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	for _, tc := range []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   []Endpoint
	}{
		{
			name:   "unset ready counts as ready; not ready left out",
			slices: []*discoveryv1.EndpointSlice{epSlice("a", 8080, endpoint("10.0.0.2", nil, nil, nil, "h"), endpoint("10.0.0.1", no, no, nil, ""))},
			want:   []Endpoint{{IP: addr("10.0.0.2"), Port: 8080, Hostname: "h", Ready: true, Serving: true}},
		},
		{
			name: "named port resolves per slice; sorted; duplicates once",
			slices: []*discoveryv1.EndpointSlice{
				epSlice("b", 9200, endpoint("10.0.0.9", yes, nil, nil, "")),
				epSlice("a", 9100, endpoint("10.0.0.5", yes, nil, nil, ""), endpoint("10.0.0.9", yes, nil, nil, "")),
				epSlice("c", 9100, endpoint("10.0.0.5", yes, nil, nil, "")),
			},
			want: []Endpoint{
				{IP: addr("10.0.0.5"), Port: 9100, Ready: true, Serving: true},
				{IP: addr("10.0.0.9"), Port: 9100, Ready: true, Serving: true},
				{IP: addr("10.0.0.9"), Port: 9200, Ready: true, Serving: true},
			},
		},
		{
			name: "no ready endpoint: serving terminating ones take traffic",
			slices: []*discoveryv1.EndpointSlice{epSlice("a", 80,
				endpoint("10.0.0.1", no, yes, yes, ""), endpoint("10.0.0.2", no, no, yes, ""), endpoint("10.0.0.3", no, no, no, ""))},
			want: []Endpoint{{IP: addr("10.0.0.1"), Port: 80, Serving: true, Terminating: true}},
		},
		{
			name: "a ready endpoint wins over terminating ones",
			slices: []*discoveryv1.EndpointSlice{epSlice("a", 80,
				endpoint("10.0.0.1", no, yes, yes, ""), endpoint("10.0.0.2", yes, nil, nil, ""))},
			want: []Endpoint{{IP: addr("10.0.0.2"), Port: 80, Ready: true, Serving: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Usable(PortEndpoints(tc.slices, "http", corev1.ProtocolTCP))
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestServicePorts(t *testing.T) {
	svc := func(name, ip string, typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip, Ports: ports}}
	}
	sticky := svc("sticky", "10.96.0.3", corev1.ServiceTypeClusterIP, corev1.ServicePort{Name: "http", Port: 80})
	sticky.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	services := []*corev1.Service{
		svc("svc", "10.96.0.2", corev1.ServiceTypeNodePort, corev1.ServicePort{Name: "http", Port: 80, NodePort: 30080},
			corev1.ServicePort{Name: "sctp", Port: 9, Protocol: corev1.ProtocolSCTP}),
		svc("headless", corev1.ClusterIPNone, corev1.ServiceTypeClusterIP, corev1.ServicePort{Name: "http", Port: 80}),
		svc("ext", "", corev1.ServiceTypeExternalName),
		sticky,
	}
	got := ServicePorts(services, Index([]*discoveryv1.EndpointSlice{epSlice("svc-1", 8080, endpoint("10.244.0.5", nil, nil, nil, ""))}))
	want := []ServicePort{
		{Namespace: "ns", Name: "sticky", PortName: "http", Protocol: corev1.ProtocolTCP, ClusterIP: addr("10.96.0.3"), Port: 80, AffinitySeconds: 10800},
		{Namespace: "ns", Name: "svc", PortName: "http", Protocol: corev1.ProtocolTCP, ClusterIP: addr("10.96.0.2"), Port: 80, NodePort: 30080,
			Endpoints: []Endpoint{{IP: addr("10.244.0.5"), Port: 8080, Ready: true, Serving: true}}},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestIngressHosts(t *testing.T) {
	ing := func(name, ip string, hosts ...string) *networkingv1.Ingress {
		i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		for _, h := range hosts {
			i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: h})
		}
		if ip != "" {
			i.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
		}
		return i
	}
	got := IngressHosts([]*networkingv1.Ingress{
		ing("a", "10.96.0.80", "Shop.Example.com", "", "*.apps.test"),
		ing("b", "10.96.0.81", "shop.example.com"),
		ing("c", "", "pending.example.com"),
		ing("d", "10.96.0.80", "shop.example.com."),
	})
	want := map[string][]netip.Addr{
		"shop.example.com": {addr("10.96.0.80"), addr("10.96.0.81")},
		"*.apps.test":      {addr("10.96.0.80")},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
