package proxier

import (
	"fmt"
	"log/slog"
	"testing"

	"minik8s.io/kubeproxy/internal/catalog"
	"minik8s.io/kubeproxy/internal/catalog/catalogtest"
	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/kubeproxy/internal/rules"
	"minik8s.io/shared/netns/netnstest"
)

var benchSizes = []int{1000, 5000}

// benchKernel is the real iptables adapter in a scratch network namespace.
func benchKernel(b *testing.B) *iptables.Tables {
	b.Helper()
	netnstest.Need(b, "iptables", "iptables-restore", "iptables-save")
	t, err := iptables.New(iptables.Config{NetNS: netnstest.New(b)})
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func benchPorts(n int) []catalog.ServicePort {
	services, slices := catalogtest.Scale(n)
	return catalog.ServicePorts(services, catalog.Index(slices))
}

// BenchmarkRestoreFull is the full payload of n Services × 2 endpoints through the real
// iptables-restore: what the very first start on a node costs.
func BenchmarkRestoreFull(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			kernel := benchKernel(b)
			payload := rules.Build(benchPorts(n), opts).Payload(nil)
			for b.Loop() {
				if err := kernel.Restore(b.Context(), payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(payload)), "payload-bytes")
		})
	}
}

// BenchmarkSyncOneChange is a whole Sync (build, partial payload, restore) after one endpoint
// of one Service moved, on a kernel holding n Services.
func BenchmarkSyncOneChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			p := New(Config{Tables: benchKernel(b), Options: opts, Logger: slog.New(slog.DiscardHandler)})
			ports := benchPorts(n)
			if _, err := p.Sync(b.Context(), ports); err != nil {
				b.Fatal(err)
			}
			moved := &ports[n/2].Endpoints[1]
			ips := [2]string{moved.IP.String(), "10.250.0.1"}
			i := 0
			var bytes int
			for b.Loop() {
				i++
				moved.IP = mustAddr(ips[i%2])
				res, err := p.Sync(b.Context(), ports)
				if err != nil {
					b.Fatal(err)
				}
				if res.PayloadBytes == 0 {
					b.Fatal("nothing restored")
				}
				bytes = res.PayloadBytes
			}
			b.ReportMetric(float64(bytes), "payload-bytes")
		})
	}
}

// BenchmarkRestartSync is the first Sync of a restarted kubeproxy on a kernel that holds its
// n Services already: read the tables back, build, find nothing to restore, check the jumps.
func BenchmarkRestartSync(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			kernel := benchKernel(b)
			ports := benchPorts(n)
			if _, err := New(Config{Tables: kernel, Options: opts, Logger: slog.New(slog.DiscardHandler)}).Sync(b.Context(), ports); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := New(Config{Tables: kernel, Options: opts, Logger: slog.New(slog.DiscardHandler)}).Sync(b.Context(), ports)
				if err != nil {
					b.Fatal(err)
				}
				if res.PayloadBytes != 0 {
					b.Fatalf("a restart restored %d bytes", res.PayloadBytes)
				}
			}
		})
	}
}

// BenchmarkCheck is the periodic check with everything in place: the canary chain, then one
// `iptables -S` per built-in chain that holds our jumps.
func BenchmarkCheck(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			kernel := benchKernel(b)
			p := New(Config{Tables: kernel, Options: opts, Logger: slog.New(slog.DiscardHandler)})
			if _, err := p.Sync(b.Context(), benchPorts(n)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if ok, err := p.Check(b.Context()); !ok || err != nil {
					b.Fatalf("check: %v, %v", ok, err)
				}
			}
		})
	}
}
