package netsuite

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/bench/internal/stats"
)

func us(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Microsecond
	}
	return out
}

func testReport() *Report {
	cfg := Config{}
	cfg.fill()
	cfg.Samples, cfg.Transfers = 4, 2
	return &Report{
		Config: cfg, Node: "vm", Namespace: "netbench-0a1b2c3d",
		PodAddr: "10.244.0.7:8080", ClusterAddr: "10.96.0.20:80",
		ServiceName: "files.netbench-0a1b2c3d.svc.cluster.local", OutsideName: "mirror.example", Upstream: "192.0.2.53:53",
		Latency: []Pair{
			// ClusterIP 5 % slower at p50 and 20 % at p99: p99 misses the goal.
			{From: "host", PodIP: stats.Summarize(us(100, 100, 200, 500)), ClusterIP: stats.Summarize(us(105, 105, 210, 600))},
			{From: "client pod", PodIP: stats.Summarize(us(200, 200, 300, 400)), ClusterIP: stats.Summarize(us(210, 210, 300, 400))},
		},
		Transfer: []Pair{
			// 64 MiB in 100 ms is 671 MB/s; through the ClusterIP in 125 ms, 537 MB/s: 0.80x.
			{From: "host", PodIP: stats.Summarize([]time.Duration{100 * time.Millisecond, 110 * time.Millisecond}),
				ClusterIP: stats.Summarize([]time.Duration{125 * time.Millisecond, 130 * time.Millisecond})},
			{From: "client pod", PodIP: stats.Summarize([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}),
				ClusterIP: stats.Summarize([]time.Duration{105 * time.Millisecond, 110 * time.Millisecond})},
		},
		DNS: []DNSResult{
			{Query: "Service name", Server: "cluster DNS 169.254.20.10", Summary: stats.Summarize(us(50, 50, 60, 80))},
			{Query: "outside name (forwarded)", Server: "cluster DNS 169.254.20.10", Summary: stats.Summarize(us(600, 600, 700, 2000)), Errors: 1},
			{Query: "outside name", Server: "upstream 192.0.2.53:53", Summary: stats.Summarize(us(500, 500, 600, 1000)), Baseline: true},
		},
	}
}

func TestGoals(t *testing.T) {
	got := testReport().Goals()
	want := []Goal{
		{Name: "host: connection latency p50, ClusterIP / pod IP", Want: "<= 1.10x", Got: "1.05x", Met: true},
		{Name: "host: connection latency p99, ClusterIP / pod IP", Want: "<= 1.10x", Got: "1.20x", Met: false},
		{Name: "client pod: connection latency p50, ClusterIP / pod IP", Want: "<= 1.10x", Got: "1.05x", Met: true},
		{Name: "client pod: connection latency p99, ClusterIP / pod IP", Want: "<= 1.10x", Got: "1.00x", Met: true},
		{Name: "host: median throughput, ClusterIP / pod IP", Want: ">= 0.90x", Got: "0.80x", Met: false},
		{Name: "client pod: median throughput, ClusterIP / pod IP", Want: ">= 0.90x", Got: "0.95x", Met: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Goals (-want +got):\n%s", diff)
	}
}

func TestGoalsWithoutSamplesAreNotMet(t *testing.T) {
	r := &Report{Latency: []Pair{{From: "host"}}, Transfer: []Pair{{From: "host"}}}
	for _, g := range r.Goals() {
		if g.Met {
			t.Errorf("goal %q met with no samples", g.Name)
		}
	}
}

func TestTables(t *testing.T) {
	r := testReport()
	lat := r.LatencyTable()
	if diff := cmp.Diff([]string{"host", "ClusterIP 10.96.0.20:80", "4", "0.105 ms", "0.600 ms", "0.600 ms", "0.255 ms", "1.05x", "1.20x"}, lat[2]); diff != "" {
		t.Errorf("latency row (-want +got):\n%s", diff)
	}
	tr := r.TransferTable()
	if diff := cmp.Diff([]string{"host", "pod IP 10.244.0.7:8080", "2", "671 MB/s", "610 MB/s", ""}, tr[1]); diff != "" {
		t.Errorf("throughput row (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"host", "ClusterIP 10.96.0.20:80", "2", "537 MB/s", "516 MB/s", "0.80x"}, tr[2]); diff != "" {
		t.Errorf("throughput row (-want +got):\n%s", diff)
	}
	dns := r.DNSTable()
	want := [][]string{
		{"query", "server", "n", "errors", "p50", "p90", "p99", "p50 / upstream", "p99 / upstream"},
		{"Service name", "cluster DNS 169.254.20.10", "4", "0", "0.050 ms", "0.080 ms", "0.080 ms", "0.10x", "0.08x"},
		{"outside name (forwarded)", "cluster DNS 169.254.20.10", "4", "1", "0.600 ms", "2.000 ms", "2.000 ms", "1.20x", "2.00x"},
		{"outside name", "upstream 192.0.2.53:53", "4", "0", "0.500 ms", "1.000 ms", "1.000 ms", "", ""},
	}
	if diff := cmp.Diff(want, dns); diff != "" {
		t.Errorf("DNS table (-want +got):\n%s", diff)
	}
}

func TestPrint(t *testing.T) {
	var out bytes.Buffer
	testReport().Print(&out)
	for _, want := range []string{
		"GET of a 1024-byte file, 4 per target",
		"a GET of a 64 MiB file on a new connection, 2 per target",
		"outside name mirror.example, upstream 192.0.2.53:53",
		"| client pod | ClusterIP 10.96.0.20:80 ",
		"| host: median throughput, ClusterIP / pod IP            | >= 0.90x | 0.80x | NO  |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}
}
