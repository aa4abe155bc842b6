package suite

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/bus"
)

func TestPerOp(t *testing.T) {
	from := cpuSample{server: time.Second, self: time.Second, broker: time.Second, busy: 10 * time.Second}
	to := cpuSample{server: 3 * time.Second, self: 2 * time.Second, broker: 1500 * time.Millisecond, busy: 15 * time.Second}
	got := perOp(from, to, 1000)
	want := CPUPerOp{Server: 2 * time.Millisecond, Client: time.Millisecond, Broker: 500 * time.Microsecond, Rest: 1500 * time.Microsecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("perOp mismatch (-want +got):\n%s", diff)
	}
	// busy is sampled separately and can trail the process counters; the
	// rest never goes negative.
	if got := perOp(from, cpuSample{server: 2 * time.Second, self: time.Second, broker: time.Second, busy: 10 * time.Second}, 1); got.Rest != 0 {
		t.Errorf("perOp rest = %v, want 0", got.Rest)
	}
	if got := perOp(from, to, 0); got != (CPUPerOp{}) {
		t.Errorf("perOp with no operations = %+v, want zero", got)
	}
}

const metricsText = `# HELP minik8s_outbox_publish_latency_seconds From receipt.
# TYPE minik8s_outbox_publish_latency_seconds histogram
minik8s_outbox_publish_latency_seconds_bucket{le="0.001"} 50
minik8s_outbox_publish_latency_seconds_bucket{le="0.0005"} 10
minik8s_outbox_publish_latency_seconds_bucket{le="0.002"} 90
minik8s_outbox_publish_latency_seconds_bucket{le="+Inf"} 100
minik8s_outbox_publish_latency_seconds_sum 0.1
minik8s_outbox_publish_latency_seconds_count 100
other_metric_bucket{le="1"} 3
`

func TestParseHistogram(t *testing.T) {
	h, err := parseHistogram([]byte(metricsText), outboxLatencyMetric, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := histogram{{0.0005, 10}, {0.001, 50}, {0.002, 90}, {math.Inf(1), 100}}
	if diff := cmp.Diff(want, h, cmp.AllowUnexported(bucket{})); diff != "" {
		t.Fatalf("parseHistogram mismatch (-want +got):\n%s", diff)
	}
	if _, err := parseHistogram([]byte(metricsText), "absent_metric", nil); err == nil {
		t.Error("parseHistogram of an absent metric: want error")
	}
	if _, err := parseHistogram([]byte(`m_bucket{le="x"} 1`), "m", nil); err == nil {
		t.Error("parseHistogram of a malformed bound: want error")
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := histogram{{0.0005, 10}, {0.001, 50}, {0.002, 90}, {math.Inf(1), 100}}
	earlier := histogram{{0.0005, 10}, {0.001, 10}, {0.002, 10}, {math.Inf(1), 10}}
	tests := []struct {
		name string
		h    histogram
		p    float64
		want time.Duration
	}{
		{"p10 in first bucket", h, 10, 500 * time.Microsecond},
		{"p50 at a bucket edge", h, 50, time.Millisecond},
		{"p51 in the next bucket", h, 51, 2 * time.Millisecond},
		{"p99 past the last bound", h, 99, time.Duration(math.MaxInt64)},
		{"empty", histogram{}, 50, 0},
		{"since drops earlier observations", h.since(earlier), 50, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.quantile(tt.p); got != tt.want {
				t.Errorf("quantile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestDecodeStamp(t *testing.T) {
	tests := []struct {
		name     string
		obj      string
		wantName string
		wantTime time.Time
		wantErr  bool
	}{
		{name: "stamped", obj: `{"metadata":{"name":"ev-1"},"data":{"sentAt":"1700000000123456789","payload":"x"}}`,
			wantName: "ev-1", wantTime: time.Unix(0, 1700000000123456789)},
		{name: "no stamp", obj: `{"metadata":{"name":"lat-1"},"data":{"payload":"x"}}`, wantErr: true},
		{name: "not json", obj: `{`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, at, err := decodeStamp([]byte(tt.obj))
			if (err != nil) != tt.wantErr {
				t.Fatalf("decodeStamp error = %v, wantErr %v", err, tt.wantErr)
			}
			if name != tt.wantName || !at.Equal(tt.wantTime) {
				t.Errorf("decodeStamp = %q, %v; want %q, %v", name, at, tt.wantName, tt.wantTime)
			}
		})
	}
}

func TestBusFilter(t *testing.T) {
	d := func(ns, name string) bus.Delivery {
		return bus.Delivery{Message: bus.Message{Headers: map[string]string{bus.HeaderNamespace: ns, bus.HeaderName: name}}}
	}
	tests := []struct {
		name string
		d    bus.Delivery
		want bool
	}{
		{"this run", d(Namespace, "ev-abc-1"), true},
		{"another run", d(Namespace, "ev-def-1"), false},
		{"another namespace", d("default", "ev-abc-1"), false},
		{"no headers", bus.Delivery{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := busFilter(tt.d, "ev-abc-"); got != tt.want {
				t.Errorf("busFilter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGoals(t *testing.T) {
	met := Report{
		CreateAPI:     stats.Summary{N: 10, P99: 9 * time.Millisecond},
		ThroughputAPI: 500, ThroughputEtcd: 1000,
		EventsSent: 10, EventBus: stats.Summary{N: 10, P99: 19 * time.Millisecond},
	}
	slow := met
	slow.CreateAPI.P99 = 10 * time.Millisecond
	slow.ThroughputAPI = 499
	slow.EventBus.P99 = 20 * time.Millisecond
	lost := met
	lost.EventBus.N = 9
	tests := []struct {
		name string
		r    Report
		want []bool
	}{
		{"all met at the edge", met, []bool{true, true, true}},
		{"all missed at the edge", slow, []bool{false, false, false}},
		{"a lost event fails the event goal", lost, []bool{true, true, false}},
		{"nothing measured meets nothing", Report{}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []bool
			for _, g := range tt.r.Goals() {
				got = append(got, g.Met)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Goals met mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindows(t *testing.T) {
	start := time.Unix(100, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	sent := []time.Time{at(0), at(100), at(499), at(500), at(999), at(2000), at(-5)}
	lat := []time.Duration{1, 2, 3, 40, 50, 60, 7}
	got := windows(sent, lat, start, at(1000), 2)
	// Sends before the start count in the first slice, after the end in
	// the last.
	want := []time.Duration{7, 60}
	if len(got) != 2 {
		t.Fatalf("windows = %d slices, want 2", len(got))
	}
	for i, w := range got {
		if w.Max != want[i] {
			t.Errorf("slice %d max = %v, want %v", i, w.Max, want[i])
		}
	}
	if got[0].N != 4 || got[1].N != 3 {
		t.Errorf("slice sizes = %d, %d; want 4, 3", got[0].N, got[1].N)
	}
	if got := windows(sent, lat, start, start, 2); got != nil {
		t.Errorf("windows of an empty span = %v, want nil", got)
	}
}
