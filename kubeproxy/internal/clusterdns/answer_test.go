package clusterdns

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubeproxy/internal/catalog"
)

func ptr[T any](v T) *T { return &v }

func svc(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, Ports: ports}}
}

func slice(ns, svcName, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports, Endpoints: eps,
	}
}

func endpoint(ip string, ready bool, hostname string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)}}
	if hostname != "" {
		e.Hostname = ptr(hostname)
	}
	return e
}

// testZone is a small cluster: a ClusterIP Service with a named port, a headless one with
// two ready pods (one with a hostname) and one not ready, an ExternalName, and two Ingress
// hosts.
func testZone() *Zone {
	web := svc("default", "web", "10.96.0.10", corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Port: 81})
	pg := svc("db", "pg", corev1.ClusterIPNone, corev1.ServicePort{Name: "pg", Port: 5432})
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}}
	pending := svc("default", "pending", "")
	slices := []*discoveryv1.EndpointSlice{
		slice("db", "pg", "pg-1", []discoveryv1.EndpointPort{{Name: ptr("pg"), Port: ptr(int32(5433))}},
			endpoint("10.244.2.10", true, ""), endpoint("10.244.1.10", true, "pg-0"), endpoint("10.244.1.11", false, "pg-1")),
	}
	hosts := map[string][]netip.Addr{
		"shop.example.com": {netip.MustParseAddr("10.96.0.80")},
		"*.apps.test":      {netip.MustParseAddr("10.96.0.81")},
	}
	return BuildZone("cluster.local", []*corev1.Service{web, pg, ext, pending}, catalog.Index(slices), hosts)
}

type reply struct {
	Rcode   string
	Answer  []string
	Extra   []string
	SOA     bool
	Forward bool
}

func ask(z *Zone, name string, qtype uint16) reply {
	req := new(dns.Msg).SetQuestion(name, qtype)
	resp, fwd := z.Answer(req)
	if fwd {
		return reply{Forward: true}
	}
	r := reply{Rcode: dns.RcodeToString[resp.Rcode]}
	for _, rr := range resp.Answer {
		r.Answer = append(r.Answer, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	for _, rr := range resp.Extra {
		r.Extra = append(r.Extra, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	for _, rr := range resp.Ns {
		if rr.Header().Rrtype == dns.TypeSOA {
			r.SOA = true
		}
	}
	return r
}

func TestAnswer(t *testing.T) {
	z := testZone()
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  reply
	}{
		{"web.default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}}},
		{"Web.Default.SVC.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"Web.Default.SVC.cluster.local. 5 IN A 10.96.0.10"}}},
		{"web.default.svc.cluster.local.", dns.TypeAAAA, reply{Rcode: "NOERROR", SOA: true}},
		{"nope.default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NXDOMAIN", SOA: true}},
		{"pending.default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NXDOMAIN", SOA: true}},
		{"default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", SOA: true}},
		{"google.com.default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NXDOMAIN", SOA: true}},
		{"cluster.local.", dns.TypeSOA, reply{Rcode: "NOERROR", Answer: []string{"cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"}}},
		{"_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, reply{Rcode: "NOERROR",
			Answer: []string{"_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 100 80 web.default.svc.cluster.local."},
			Extra:  []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}}},
		{"_http._udp.web.default.svc.cluster.local.", dns.TypeSRV, reply{Rcode: "NXDOMAIN", SOA: true}},
		{"pg.db.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{
			"pg.db.svc.cluster.local. 5 IN A 10.244.1.10", "pg.db.svc.cluster.local. 5 IN A 10.244.2.10"}}},
		{"pg-0.pg.db.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"pg-0.pg.db.svc.cluster.local. 5 IN A 10.244.1.10"}}},
		{"pg-1.pg.db.svc.cluster.local.", dns.TypeA, reply{Rcode: "NXDOMAIN", SOA: true}}, // not ready
		{"10-244-2-10.pg.db.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"10-244-2-10.pg.db.svc.cluster.local. 5 IN A 10.244.2.10"}}},
		{"_pg._tcp.pg.db.svc.cluster.local.", dns.TypeSRV, reply{Rcode: "NOERROR",
			Answer: []string{
				"_pg._tcp.pg.db.svc.cluster.local. 5 IN SRV 0 50 5433 pg-0.pg.db.svc.cluster.local.",
				"_pg._tcp.pg.db.svc.cluster.local. 5 IN SRV 0 50 5433 10-244-2-10.pg.db.svc.cluster.local.",
			},
			Extra: []string{"pg-0.pg.db.svc.cluster.local. 5 IN A 10.244.1.10", "10-244-2-10.pg.db.svc.cluster.local. 5 IN A 10.244.2.10"}}},
		{"ext.default.svc.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"ext.default.svc.cluster.local. 5 IN CNAME example.org."}}},
		{"10-244-3-7.default.pod.cluster.local.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"10-244-3-7.default.pod.cluster.local. 5 IN A 10.244.3.7"}}},
		{"10-244-3-7.default.pod.cluster.local.", dns.TypeAAAA, reply{Rcode: "NOERROR", SOA: true}},
		{"10.96.0.10.in-addr.arpa.", dns.TypePTR, reply{Forward: true}},
		{"10.0.96.10.in-addr.arpa.", dns.TypePTR, reply{Rcode: "NOERROR", Answer: []string{"10.0.96.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local."}}},
		{"10.1.244.10.in-addr.arpa.", dns.TypePTR, reply{Rcode: "NOERROR", Answer: []string{"10.1.244.10.in-addr.arpa. 5 IN PTR pg-0.pg.db.svc.cluster.local."}}},
		{"Shop.Example.com.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"Shop.Example.com. 5 IN A 10.96.0.80"}}},
		{"shop.example.com.", dns.TypeAAAA, reply{Rcode: "NOERROR"}},
		{"x.apps.test.", dns.TypeA, reply{Rcode: "NOERROR", Answer: []string{"x.apps.test. 5 IN A 10.96.0.81"}}},
		{"y.x.apps.test.", dns.TypeA, reply{Forward: true}},
		{"example.org.", dns.TypeA, reply{Forward: true}},
	} {
		t.Run(dns.TypeToString[tc.qtype]+" "+tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ask(z, tc.name, tc.qtype)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnswerRefusesSeveralQuestions(t *testing.T) {
	req := new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	req.Question = append(req.Question, req.Question[0])
	resp, fwd := testZone().Answer(req)
	if fwd || resp.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: forward %v, rcode %s; want FORMERR", fwd, dns.RcodeToString[resp.Rcode])
	}
}
