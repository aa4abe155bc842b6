package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"minik8s.io/dashboard/internal/prom"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeProm is a Prometheus HTTP API answering canned vectors by query, and a two-point
// matrix for every query_range; it records the range queries it was asked.
type fakeProm struct {
	vectors map[string]string // query -> result JSON
	mu      sync.Mutex
	ranges  []url.Values
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/api/v1/query":
		res, ok := f.vectors[q.Get("query")]
		if !ok {
			res = "[]"
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":`+res+`}}`)
	case "/api/v1/query_range":
		f.mu.Lock()
		f.ranges = append(f.ranges, q)
		f.mu.Unlock()
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"node":"node-a","container":"app"},"values":[[1000,"0.5"],[1015,"0.75"]]}]}}`)
	default:
		http.NotFound(w, r)
	}
}

func vector(labels, value string) string {
	return `[{"metric":` + labels + `,"value":[1,"` + value + `"]}]`
}

func newTestServer(t *testing.T, metrics Metrics) (*httptest.Server, *fakeProm) {
	t.Helper()
	fp := &fakeProm{vectors: map[string]string{
		"instance:node_cpu_utilisation:rate2m":                                                             vector(`{"node":"node-a"}`, "0.25"),
		"instance:node_memory_utilisation:ratio":                                                           vector(`{"node":"node-a"}`, "0.5"),
		"function:minik8s_serverless_gateway_calls:rate2m":                                                 vector(`{"namespace":"fns","function":"hello"}`, "2.5"),
		"function:minik8s_serverless_gateway_errors:ratio_rate5m":                                          vector(`{"namespace":"fns","function":"hello"}`, "0.1"),
		`sum by (namespace, function) (minik8s_serverless_gateway_calls_total{function!=""})`:              vector(`{"namespace":"fns","function":"hello"}`, "40"),
		`sum by (namespace, function) (minik8s_serverless_gateway_calls_total{function!="", code=~"5.."})`: vector(`{"namespace":"fns","function":"hello"}`, "4"),
		`sum by (namespace, function) (minik8s_serverless_gateway_cold_starts_total)`:                      vector(`{"namespace":"fns","function":"hello"}`, "3"),
	}}
	promSrv := httptest.NewServer(fp)
	t.Cleanup(promSrv.Close)
	if metrics == nil {
		metrics = prom.New(promSrv.URL, nil)
	}
	one := int32(1)
	two := int32(2)
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.7"}},
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "minik8s/echo:1.0"}, {Name: "side", Image: "minik8s/busybox:1.0"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9", ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Ready: true, RestartCount: 3, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
			}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending-1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &two},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: &one},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: 1}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "once"}, Status: batchv1.JobStatus{Succeeded: 1}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e1"}, Type: "Warning", Reason: "BackOff",
			Message: "Back-off restarting failed container side", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			LastTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e2"}, Type: "Normal", Reason: "Scheduled",
			Message: "Successfully assigned default/web-1", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			LastTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
	)
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		functionsResource: "FunctionList", executionsResource: "WorkflowExecutionList",
	},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serverless.minik8s.io/v1", "kind": "Function",
			"metadata": map[string]any{"namespace": "fns", "name": "hello"},
			"status":   map[string]any{"phase": "Ready", "desiredReplicas": int64(2), "replicas": int64(2), "readyReplicas": int64(1)},
		}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serverless.minik8s.io/v1", "kind": "WorkflowExecution",
			"metadata": map[string]any{"namespace": "fns", "name": "run-1"},
			"spec":     map[string]any{"workflow": "pipeline"},
			"status":   map[string]any{"phase": "Failed", "error": "States.TaskFailed", "durationMilliseconds": int64(1500)},
		}},
	)
	chart := filepath.Join(t.TempDir(), "chart.min.js")
	if err := os.WriteFile(chart, []byte("window.Chart = function () {};"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Kube: kube, Dynamic: dyn, Metrics: metrics, ChartJS: chart, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, fp
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	for _, tc := range []struct {
		path    string
		want    []string
		wantNot []string
	}{
		{"/", []string{`data-node="node-a"`, "192.0.2.7", `class="ok">True<`, "25.0%", "50.0%", "8.0 GiB",
			`data-phase="Running">1<`, `data-phase="Pending">1<`, `data-plot="/api/range/node-cpu"`}, []string{`class="errors"`}},
		{"/workloads", []string{"<td>web</td>", `class="bad">1/2<`, "<td>db</td>", `class="ok">1/1<`, "<td>agent</td>", "<td>once</td>"}, nil},
		{"/pods", []string{`data-pod="default/web-1"`, `data-pod="default/pending-1"`, "app, side", "10.244.0.9", `class="bad">1/2<`, "<td>3</td>", "<td>1h</td>"}, []string{`id="log"`}},
		{"/pods?namespace=default&pod=web-1", []string{"Pod default/web-1", "Waiting: CrashLoopBackOff", `id="log">fake logs<`,
			`data-plot="/api/range/pod-cpu?namespace=default&amp;pod=web-1"`, "minik8s/busybox:1.0"}, nil},
		{"/pods?namespace=default&pod=nope", []string{`class="errors"`, "default/nope not found"}, nil},
		{"/serverless", []string{`data-function="fns/hello" data-calls="40"`, "<td>1/2/2</td>", "<td>2.50</td>", "<td>40</td>", "<td>4</td>", "10.0%", "<td>3</td>",
			`data-plot="/api/range/function?function=fns/hello"`, "<td>run-1</td>", "<td>pipeline</td>", "1.5s", "States.TaskFailed"}, nil},
		{"/events", []string{"BackOff", "Pod/web-1", "Back-off restarting failed container side", "2 latest of 2"}, nil},
		{"/events?type=Warning", []string{"BackOff", "1 latest of 1"}, []string{"Scheduled"}},
		{"/pods/default/web-1/log?container=app", []string{"fake logs"}, nil},
		{"/static/chart.min.js", []string{"window.Chart"}, nil},
		{"/static/dashboard.js", []string{"data-points"}, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q:\n%s", tc.path, w, body)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("GET %s has %q:\n%s", tc.path, w, body)
				}
			}
		})
	}
}

// A Prometheus that does not answer leaves the pages' API data in place and says why.
func TestPagesWithoutPrometheus(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	down.Close()
	srv, _ := newTestServer(t, prom.New(down.URL, nil))
	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	for _, w := range []string{`data-node="node-a"`, `class="errors"`, "prometheus /api/v1/query"} {
		if !strings.Contains(body, w) {
			t.Errorf("GET / without Prometheus lacks %q:\n%s", w, body)
		}
	}
	code, body = get(t, srv.URL+"/api/range/node-cpu")
	if code != http.StatusBadGateway || !strings.Contains(body, `"error"`) {
		t.Errorf("GET /api/range/node-cpu without Prometheus: %d %s, want 502 with an error", code, body)
	}
}

func TestRangePlots(t *testing.T) {
	windowEnd := float64(now.UnixMilli())
	windowStart := windowEnd - float64((15 * time.Minute).Milliseconds())
	srv, fp := newTestServer(t, nil)
	for _, tc := range []struct {
		path      string
		code      int
		wantQuery []string
		want      plotAnswer
	}{
		{path: "/api/range/node-cpu", code: 200, wantQuery: []string{"instance:node_cpu_utilisation:rate2m"},
			want: plotAnswer{Title: "Node CPU", Unit: "ratio", Start: windowStart, End: windowEnd, Series: []plotSeries{{Label: "node-a", Axis: "y", Points: [][2]float64{{1000e3, 0.5}, {1015e3, 0.75}}}}}},
		{path: "/api/range/pod-memory?namespace=default&pod=web-1", code: 200,
			wantQuery: []string{`max by (container) (container_memory_working_set_bytes{namespace="default", pod="web-1", container!="", container!="POD"})`},
			want:      plotAnswer{Title: "Memory of web-1", Unit: "bytes", Start: windowStart, End: windowEnd, Series: []plotSeries{{Label: "app", Axis: "y", Points: [][2]float64{{1000e3, 0.5}, {1015e3, 0.75}}}}}},
		{path: "/api/range/function?function=fns/hello", code: 200,
			wantQuery: []string{
				`sum(function:minik8s_serverless_gateway_calls:rate2m{namespace="fns", function="hello"})`,
				`max(minik8s_serverless_autoscaler_desired_replicas{function="fns/hello"})`,
				`count(max by (pod) (container_memory_working_set_bytes{namespace="fns", pod=~"hello-[a-z0-9]+-[a-z0-9]+", container!="", container!="POD"}))`,
			},
			want: plotAnswer{Title: "Function fns/hello", Unit: "perSecond", Unit1: "replicas", Start: windowStart, End: windowEnd, Series: []plotSeries{
				{Label: "calls/s", Axis: "y", Points: [][2]float64{{1000e3, 0.5}, {1015e3, 0.75}}},
				{Label: "desired replicas", Axis: "y1", Points: [][2]float64{{1000e3, 0.5}, {1015e3, 0.75}}},
				{Label: "pods", Axis: "y1", Points: [][2]float64{{1000e3, 0.5}, {1015e3, 0.75}}},
			}}},
		{path: "/api/range/pod-cpu?namespace=default&pod=x%22%7D", code: 400, want: plotAnswer{Error: `want namespace and pod names, have "default" and "x\"}"`}},
		{path: "/api/range/function?function=hello", code: 400, want: plotAnswer{Error: `want function=namespace/name, have "hello"`}},
		{path: "/api/range/nothing", code: 400, want: plotAnswer{Error: `no plot "nothing"`}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			fp.mu.Lock()
			fp.ranges = nil
			fp.mu.Unlock()
			code, body := get(t, srv.URL+tc.path)
			if code != tc.code {
				t.Fatalf("GET %s: %d, want %d\n%s", tc.path, code, tc.code, body)
			}
			var got plotAnswer
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
			}
			fp.mu.Lock()
			defer fp.mu.Unlock()
			var queries []string
			for _, q := range fp.ranges {
				queries = append(queries, q.Get("query"))
				if start, end := q.Get("start"), q.Get("end"); start != "1767322145" || end != "1767323045" {
					t.Errorf("range %s..%s, want the 15 minutes before %s", start, end, now)
				}
			}
			if diff := cmp.Diff(tc.wantQuery, queries); diff != "" {
				t.Errorf("GET %s queries (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}
