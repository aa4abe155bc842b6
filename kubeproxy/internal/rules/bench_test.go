package rules

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik8s.io/kubeproxy/internal/catalog"
)

// Scale returns n ClusterIP Services (every tenth a NodePort) with two ready endpoints each,
// the shape the benchmarks measure.
func Scale(n int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	services := make([]*corev1.Service, 0, n)
	slices := make([]*discoveryv1.EndpointSlice, 0, n)
	for i := range n {
		name := fmt.Sprintf("svc-%05d", i)
		ip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
		var opts []svcOpt
		np := int32(0)
		if i%10 == 0 {
			opts, np = append(opts, nodePort), int32(30000+i/10)
		}
		services = append(services, service("bench", name, ip.String(), []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, np)}, opts...))
		slices = append(slices, slice("bench", name, name+"-1", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
			ep{ip: netip.AddrFrom4([4]byte{10, 244, byte(i >> 7), byte(i<<1) | 0}).String(), ready: true},
			ep{ip: netip.AddrFrom4([4]byte{10, 245, byte(i >> 7), byte(i<<1) | 1}).String(), ready: true}))
	}
	return services, slices
}

// BenchmarkBuild measures the pure part of a sync: catalog, ruleset and payload.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		services, slices := Scale(n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			var size int
			for b.Loop() {
				r := Build(catalog.ServicePorts(services, catalog.Index(slices)), defaultOptions)
				size = len(r.Payload(nil))
			}
			b.ReportMetric(float64(size), "payload-bytes")
		})
	}
}
