package describe

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestDescribeFunction(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	built := corev1.Event{Type: "Normal", Reason: "Built", Message: "image minik8s-fn/default.add:v2 built in 12s",
		Source: corev1.EventSource{Component: "serverless"}, LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second))}
	tests := []struct {
		name   string
		obj    string
		events []corev1.Event
		want   []string
		absent []string
	}{
		{name: "deployed and called", events: []corev1.Event{built}, obj: `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: add, namespace: default, creationTimestamp: "2025-01-01T09:00:00Z"}
spec:
  runtime: python3
  handler: main.handle
  source: {main.py: "def handle(e):\n    return e\n", lib/util.py: "X = 1\n"}
  requirements: "# numbers\nnumpy==2.1\n\nrequests >= 2.0\n"
  timeoutSeconds: 30
  scale: {minReplicas: 0, maxReplicas: 5, targetConcurrency: 10, maxQueue: 100, stableWindowSeconds: 60, idleSeconds: 45}
  env: [{name: MODE, value: fast}]
  schedules:
  - {name: nightly, schedule: "0 3 * * *", input: "{\"n\": 1}"}
  - {name: never-ran, schedule: "@every 1h"}
status:
  phase: Ready
  version: 2
  sourceHash: sha256:0123456789abcdef0123
  image: minik8s-fn/default.add:v2
  desiredReplicas: 2
  replicas: 2
  readyReplicas: 1
  lastCallTime: "2025-01-01T11:59:00Z"
  conditions: [{type: Ready, status: "True", reason: PodsReady, message: "1 of 2 pods ready", lastTransitionTime: "2025-01-01T11:00:00Z"}]
  build:
    version: 2
    phase: Succeeded
    startTime: "2025-01-01T11:50:00Z"
    completionTime: "2025-01-01T11:50:12Z"
    log: "Step 1/4 : FROM minik8s/python-runtime\nStep 2/4 : COPY . /function\nSuccessfully built 1234\n"
  schedules: [{name: nightly, lastScheduleTime: "2025-01-01T03:00:00Z", lastResult: Succeeded}]
`, want: []string{
			"Name:               add\n", "Namespace:          default\n",
			"Runtime:            python3\n", "Handler:            main.handle\n",
			"Source:             2 files, 34 B: lib/util.py (6 B), main.py (28 B)\n",
			"Requirements:       numpy==2.1, requests >= 2.0\n",
			"Timeout:            30s\n",
			"Scale:\n  Replicas:            0 to 5\n  Target Concurrency:  10 per pod\n  Max Queue:           100\n  Stable Window:       60s\n  Idle Before Zero:    45s\n",
			"Environment:\n  MODE:  fast\n",
			"  Phase:      Ready\n", "  Version:    v2 (source 0123456789ab)\n",
			"  Image:      minik8s-fn/default.add:v2\n",
			"  Replicas:   2 desired | 2 current | 1 ready\n",
			"  Last Call:  60s ago (Wed, 01 Jan 2025 11:59:00 +0000)\n",
			"    Ready   True    PodsReady  1 of 2 pods ready\n",
			"Build:\n  Version:   v2\n  Phase:     Succeeded\n",
			"  Duration:  12s\n",
			"  Log (last lines):\n    Step 1/4 : FROM minik8s/python-runtime\n    Step 2/4 : COPY . /function\n    Successfully built 1234\n",
			"  nightly    0 3 * * *  {\"n\": 1}  9h ago (Wed, 01 Jan 2025 03:00:00 +0000)  Succeeded\n",
			"  never-ran  @every 1h  {}        <none>                                    <none>\n",
			"  Normal  Built   30s   serverless  image minik8s-fn/default.add:v2 built in 12s\n",
		}},
		{name: "failed build, never deployed", obj: `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: img, namespace: team}
spec:
  handler: main.handle
  source: {main.py: "x"}
  requirements: "pillow==99\n"
status:
  phase: Failed
  build:
    version: 1
    phase: Failed
    message: "pip install failed:\nERROR: No matching distribution found for pillow==99"
    startTime: "2025-01-01T11:59:00Z"
    log: "` + strings.Repeat("line\\n", 30) + `ERROR: No matching distribution found for pillow==99\n"
`, want: []string{
			"Source:             1 file, 1 B: main.py (1 B)\n",
			"  Version:    <none>\n", "  Replicas:   0 desired | 0 current | 0 ready\n", "  Last Call:  <none>\n",
			"Build:\n  Version:   v1\n  Phase:     Failed\n",
			"  Message:   pip install failed: ERROR: No matching distribution found for pillow==99\n",
			"  Duration:  60s\n",
			"    line\n    ERROR: No matching distribution found for pillow==99\n",
			"Schedules:  <none>\nEvents:     <none>\n",
		}, absent: []string{strings.Repeat("    line\n", buildLogLines)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.obj), &u.Object); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := ObjectAt(&b, u, tt.events, now); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("output has %q:\n%s", a, b.String())
				}
			}
		})
	}
}
