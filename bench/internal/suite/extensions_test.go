package suite

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/bench/internal/stats"
)

func TestNoteLength(t *testing.T) {
	tests := []struct {
		name               string
		noteLen, got, want int
		wantLen            int
	}{
		{"custom object larger", 256, 420, 380, 216},
		{"custom object smaller", 256, 350, 380, 286},
		{"already equal", 256, 380, 380, 256},
		{"cannot shrink below empty", 10, 500, 380, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := noteLength(tt.noteLen, tt.got, tt.want); got != tt.wantLen {
				t.Errorf("noteLength(%d, %d, %d) = %d, want %d", tt.noteLen, tt.got, tt.want, got, tt.wantLen)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		want     map[string]string
		wantRest string
		wantErr  bool
	}{
		{name: "pairs", text: `a="1",b="x y"} 3`, want: map[string]string{"a": "1", "b": "x y"}, wantRest: " 3"},
		{name: "escapes and comma in a value", text: `a="q\"x,\\n\n"} 1`, want: map[string]string{"a": "q\"x,\\n\n"}, wantRest: " 1"},
		{name: "trailing comma", text: `a="1",} 2`, want: map[string]string{"a": "1"}, wantRest: " 2"},
		{name: "empty", text: `} 2`, want: map[string]string{}, wantRest: " 2"},
		{name: "unterminated value", text: `a="1} 2`, wantErr: true},
		{name: "no value", text: `a} 2`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, err := parseLabels(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseLabels error = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || rest != tt.wantRest {
				t.Errorf("parseLabels labels (-want +got):\n%s rest %q, want %q", diff, rest, tt.wantRest)
			}
		})
	}
}

// webhookMetricsText has our webhook's series for two operations, another webhook's, and a
// timestamped line, as an apiserver might expose them.
const webhookMetricsText = `# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="CREATE",rejected="false",type="validating",le="0.005"} 90
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="CREATE",rejected="false",type="validating",le="0.025"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="CREATE",rejected="false",type="validating",le="+Inf"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="UPDATE",rejected="false",type="validating",le="0.005"} 5
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="UPDATE",rejected="false",type="validating",le="0.025"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name="configmaps.bench.minik8s.io",operation="UPDATE",rejected="false",type="validating",le="+Inf"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="validating",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="validating",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="validating",le="+Inf"} 7
apiserver_admission_webhook_admission_duration_seconds_sum{name="configmaps.bench.minik8s.io",operation="CREATE",rejected="false",type="validating"} 0.2
apiserver_admission_webhook_admission_duration_seconds_sum{name="configmaps.bench.minik8s.io",operation="UPDATE",rejected="false",type="validating"} 0.05 1700000000000
apiserver_admission_webhook_admission_duration_seconds_sum{name="other.example.com",operation="CREATE",rejected="false",type="validating"} 70
`

func TestParseLabelledHistogram(t *testing.T) {
	ours := map[string]string{"name": webhookName}
	tests := []struct {
		name    string
		match   map[string]string
		want    histogram
		wantSum float64
	}{
		{"our webhook, both operations added", ours, histogram{{0.005, 95}, {0.025, 110}, {math.Inf(1), 110}}, 0.25},
		{"our webhook's creates", map[string]string{"name": webhookName, "operation": "CREATE"}, histogram{{0.005, 90}, {0.025, 100}, {math.Inf(1), 100}}, 0.2},
		{"every series", nil, histogram{{0.005, 95}, {0.025, 110}, {math.Inf(1), 117}}, 70.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseHistogram([]byte(webhookMetricsText), webhookMetric, tt.match)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, h, cmp.AllowUnexported(bucket{})); diff != "" {
				t.Errorf("parseHistogram (-want +got):\n%s", diff)
			}
			sum, found, err := sumSamples([]byte(webhookMetricsText), webhookMetric+"_sum", tt.match)
			if err != nil || !found || math.Abs(sum-tt.wantSum) > 1e-9 {
				t.Errorf("sumSamples = %v, %v, %v; want %v, true, nil", sum, found, err, tt.wantSum)
			}
		})
	}
	if _, err := parseHistogram([]byte(webhookMetricsText), webhookMetric, map[string]string{"name": "absent.example.com"}); err == nil {
		t.Error("parseHistogram of a series nobody exposes: want error")
	}
	if _, found, err := sumSamples([]byte(webhookMetricsText), webhookMetric+"_count", nil); found || err != nil {
		t.Errorf("sumSamples of an absent metric: found %v, err %v; want neither", found, err)
	}
}

// TestWebhookServer round-trips an AdmissionReview through the webhook server over TLS, with
// a client that trusts only the CA the configuration would carry.
func TestWebhookServer(t *testing.T) {
	srv := &webhookServer{}
	srv.handled.Store(stats.NewRecorder(4))
	url, caPEM, stop, err := startWebhook(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := webhookConfig(url, caPEM)
	if got := *cfg.Webhooks[0].ClientConfig.URL; got != url || !bytes.Equal(cfg.Webhooks[0].ClientConfig.CABundle, caPEM) {
		t.Fatalf("configuration client config = %q, %d CA bytes; want %q and the CA", got, len(cfg.Webhooks[0].ClientConfig.CABundle), url)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA bundle holds no certificate")
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	tests := []struct {
		name     string
		body     string
		wantCode int
		wantUID  types.UID
	}{
		{"review allowed", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":"CREATE"}}`, http.StatusOK, "u-1"},
		{"review without request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest, ""},
		{"not json", `{`, http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := hc.Post(url, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if tt.wantCode != http.StatusOK {
				return
			}
			var out admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if out.Kind != "AdmissionReview" || out.APIVersion != "admission.k8s.io/v1" || out.Response == nil || !out.Response.Allowed || out.Response.UID != tt.wantUID {
				t.Errorf("review answer %+v, want allowed with uid %s", out, tt.wantUID)
			}
		})
	}
	if n, h := srv.calls.Load(), srv.handled.Load().Len(); n != 1 || h != 1 {
		t.Errorf("server counted %d calls and timed %d, want 1 each (only the review answered)", n, h)
	}
}

func TestExtensionsGoals(t *testing.T) {
	met := ExtensionsReport{
		CreateCustom:     stats.Summary{N: 10, P50: 1200 * time.Microsecond, P99: 2400 * time.Microsecond},
		CreateConfigMap:  stats.Summary{N: 10, P50: time.Millisecond, P99: 2 * time.Millisecond},
		ThroughputCustom: 834, ThroughputConfigMap: 1000,
		Webhook: &WebhookReport{With: stats.Summary{N: 10, P50: 3 * time.Millisecond}, Without: stats.Summary{N: 10, P50: time.Millisecond}},
	}
	slow := met
	slow.CreateCustom.P50, slow.CreateCustom.P99 = 1201*time.Microsecond, 2401*time.Microsecond
	slow.ThroughputCustom = 833
	slow.Webhook = &WebhookReport{With: stats.Summary{N: 10, P50: 3001 * time.Microsecond}, Without: stats.Summary{N: 10, P50: time.Millisecond}}
	pending := met
	pending.Webhook, pending.WebhookSkipped = nil, "admission webhooks not served"
	empty := ExtensionsReport{}
	tests := []struct {
		name string
		x    ExtensionsReport
		want []bool
	}{
		{"at the bounds", met, []bool{true, true, true, true}},
		{"just past them", slow, []bool{false, false, false, false}},
		{"webhook not measured", pending, []bool{true, true, true}},
		{"nothing measured", empty, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []bool
			for _, g := range tt.x.Goals() {
				got = append(got, g.Met)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("goals met (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtensionsPrint(t *testing.T) {
	x := ExtensionsReport{
		ConfigMapBytes: 380, CustomBytes: 381,
		CreateCustom:     stats.Summary{N: 2000, P50: 1100 * time.Microsecond, P99: 3 * time.Millisecond, Mean: 1200 * time.Microsecond},
		CreateConfigMap:  stats.Summary{N: 2000, P50: time.Millisecond, P99: 2 * time.Millisecond, Mean: time.Millisecond},
		ThroughputCustom: 900, ThroughputConfigMap: 1000,
		ThroughputCPU:  [2]CPUPerOp{{Server: 300 * time.Microsecond, Client: 100 * time.Microsecond}, {Server: 250 * time.Microsecond, Client: 80 * time.Microsecond}},
		WebhookSkipped: "admission webhooks not served",
	}
	var out bytes.Buffer
	x.Print(&out, 64)
	for _, want := range []string{
		"stored 381 against 380 bytes",
		"schema: NOT applied",
		"| 4 create latency, 1 client, n=2000 | p50       | 1.10 ms         | 1.00 ms   | 1.10x | <= 1.20x | yes |",
		"| 4 create latency, 1 client, n=2000 | p99       | 3.00 ms         | 2.00 ms   | 1.50x | <= 1.20x | NO  |",
		"| 5 throughput, 64 clients",
		"| 900 /s          | 1000 /s   | 0.90x | >= 0.83x | yes |",
		"pending: admission webhooks not served",
		"| custom resource create | 300 µs    | 100 µs        | 0 µs     | 0 µs  | 400 µs |",
		"| ConfigMap create       | 250 µs    | 80 µs         | 0 µs     | 0 µs  | 330 µs |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}

	x.SchemaApplied = true
	x.Webhook = &WebhookReport{
		With: stats.Summary{N: 2000, P50: 2500 * time.Microsecond}, Without: stats.Summary{N: 2000, P50: time.Millisecond},
		Server: stats.Summary{N: 2000, P50: 40 * time.Microsecond, P99: 90 * time.Microsecond}, Calls: 2000,
	}
	out.Reset()
	x.Print(&out, 64)
	for _, want := range []string{"schema: applied", "| +1.50 ms", "| 0.04 ms / 0.09 ms", "| 2000/2000", "series absent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "pending") {
		t.Errorf("a measured webhook is reported pending:\n%s", out.String())
	}
}
