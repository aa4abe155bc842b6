package rules

import (
	"fmt"
	"testing"

	"minik8s.io/kubeproxy/internal/catalog"
	"minik8s.io/kubeproxy/internal/catalog/catalogtest"
)

// BenchmarkBuild measures the pure part of a sync: service ports, ruleset and full payload.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		services, slices := catalogtest.Scale(n)
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
