package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// monitoringNS is where make up installs the monitoring stack (configs/monitoring).
const monitoringNS = "minik8s-monitoring"

// prometheusAPI asks the make up cluster's Prometheus through the apiserver's services proxy,
// as the real kubectl's get --raw does.
type prometheusAPI struct {
	t          *testing.T
	kubeconfig string
}

// get returns the data field of a Prometheus API answer to path (with its query), or an
// error when the answer is not a success.
func (p prometheusAPI) get(path string, query url.Values) (json.RawMessage, error) {
	raw := "/api/v1/namespaces/" + monitoringNS + "/services/prometheus:9090/proxy" + path
	if len(query) > 0 {
		raw += "?" + query.Encode()
	}
	out, err := execErr(p.t.Context(), realKubectl, "--kubeconfig", p.kubeconfig, "get", "--raw", raw)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		return nil, fmt.Errorf("GET %s: %v: %s", raw, err, out)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("GET %s: %s", raw, answer.Error)
	}
	return answer.Data, nil
}

// promTarget is one active target of /api/v1/targets.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

func (p prometheusAPI) targets() ([]promTarget, error) {
	data, err := p.get("/api/v1/targets", url.Values{"state": {"active"}})
	if err != nil {
		return nil, err
	}
	var d struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	return d.ActiveTargets, json.Unmarshal(data, &d)
}

// promSample is one series of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  float64
}

// query evaluates an instant PromQL query.
func (p prometheusAPI) query(q string) ([]promSample, error) {
	data, err := p.get("/api/v1/query", url.Values{"query": {q}})
	if err != nil {
		return nil, err
	}
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: a %s, not a vector", q, d.ResultType)
	}
	out := make([]promSample, 0, len(d.Result))
	for _, r := range d.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %v", q, r.Value[1], err)
		}
		out = append(out, promSample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// TestMonitoringOnMakeUp checks the monitoring stack make up installs: Prometheus finds the
// apiserver, the kubelet, kubeproxy, node-exporter, the control plane's
// components and itself through Kubernetes discovery alone, all up; node-exporter's series
// exist for every node; an annotated pod exporting its own gauge is scraped and dropped after
// it is deleted, with no restart of Prometheus; a busy pod's CPU counter rises; the rules are
// loaded and the alerts API answers.
func TestMonitoringOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	kc := []string{"--kubeconfig", c.kubeconfig}
	real := func(args ...string) string {
		return execOK(t, append([]string{realKubectl}, append(kc, args...)...)...)
	}
	prom := prometheusAPI{t: t, kubeconfig: c.kubeconfig}
	if _, err := execErr(t.Context(), append([]string{realKubectl}, append(kc, "-n", monitoringNS, "get", "deployment", "prometheus")...)...); err != nil {
		t.Fatalf("no monitoring stack on the make up cluster (make up installs it unless MINIK8S_MONITORING=0): %v", err)
	}
	// The pod and its restarts now: discovery below must need neither a new pod nor a restart.
	prometheusState := func() string {
		return strings.TrimSpace(real("-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus",
			"-o", "jsonpath={.items[0].metadata.uid} {.items[0].status.containerStatuses[0].restartCount}"))
	}
	prometheusBefore := prometheusState()
	nodes := strings.Fields(real("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))

	t.Run("every target up", func(t *testing.T) {
		jobs := []string{"apiserver", "kubelet", "kubelet-cadvisor", "kubelet-probes", "kubeproxy", "node-exporter", "scheduler",
			"controller-manager", "serverless", "kubernetes-pods"}
		var last string
		defer func() {
			if t.Failed() {
				t.Log(last)
			}
		}()
		eventually(t, 3*time.Minute, "every job's targets up", func() bool {
			ts, err := prom.targets()
			if err != nil {
				last = err.Error()
				return false
			}
			up := map[string]int{}
			var down []string
			for _, tg := range ts {
				if tg.Health == "up" {
					up[tg.Labels["job"]]++
				} else {
					down = append(down, tg.Labels["job"]+" "+tg.ScrapeURL+": "+tg.Health+" "+tg.LastError)
				}
			}
			var missing []string
			for _, j := range jobs {
				if up[j] == 0 {
					missing = append(missing, j)
				}
			}
			// One kubelet, kubeproxy and node-exporter target per node.
			for _, j := range []string{"kubelet", "kubelet-cadvisor", "kubelet-probes", "kubeproxy", "node-exporter"} {
				if up[j] != len(nodes) {
					missing = append(missing, fmt.Sprintf("%s (%d of %d nodes)", j, up[j], len(nodes)))
				}
			}
			last = fmt.Sprintf("not up: %v; down: %v", missing, down)
			return len(missing) == 0 && len(down) == 0
		})
	})

	t.Run("node-exporter on every node", func(t *testing.T) {
		eventually(t, 2*time.Minute, "node_cpu_seconds_total of every node", func() bool {
			got, err := prom.query(`count by (node) (node_cpu_seconds_total{job="node-exporter",mode="idle"})`)
			if err != nil {
				t.Log(err)
				return false
			}
			var have []string
			for _, s := range got {
				have = append(have, s.Metric["node"])
			}
			slices.Sort(have)
			want := slices.Clone(nodes)
			slices.Sort(want)
			return slices.Equal(have, want)
		})
		got, err := prom.query(`node_memory_MemTotal_bytes{job="node-exporter"}`)
		if err != nil || len(got) != len(nodes) || got[0].Value <= 0 {
			t.Errorf("node_memory_MemTotal_bytes: %v %v", got, err)
		}
	})

	ns := fmt.Sprintf("e2e-mon-%d", time.Now().UnixNano()%1_000_000)
	real("create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = execErr(t.Context(), append([]string{realKubectl}, append(kc, "delete", "namespace", ns, "--wait=false")...)...)
	})
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: exporter
  namespace: `+ns+`
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: "8080"
    prometheus.io/path: /_echo/metrics
spec:
  containers:
    - name: echo
      image: minik8s/echo:1.0
      ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: busy
  namespace: `+ns+`
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: spin
      image: minik8s/busybox:1.0
      command: [sh, -c, "while :; do :; done"]
      resources:
        limits: {cpu: 200m}
      readinessProbe:
        exec: {command: ["true"]}
        periodSeconds: 5
`), 0o644); err != nil {
		t.Fatal(err)
	}
	real("apply", "-f", manifest)
	real("-n", ns, "wait", "--for=condition=Ready", "pod/exporter", "pod/busy", "--timeout=120s")

	t.Run("an annotated pod is scraped, and dropped once deleted", func(t *testing.T) {
		gauge := fmt.Sprintf(`echo_healthy{job="kubernetes-pods",namespace=%q,pod="exporter"}`, ns)
		eventually(t, 2*time.Minute, "the pod's own gauge in Prometheus", func() bool {
			got, err := prom.query(gauge)
			return err == nil && len(got) == 1 && got[0].Value == 1
		})
		real("-n", ns, "delete", "pod", "exporter", "--wait=true")
		eventually(t, 2*time.Minute, "the deleted pod's target gone", func() bool {
			ts, err := prom.targets()
			if err != nil {
				return false
			}
			return !slices.ContainsFunc(ts, func(tg promTarget) bool {
				return tg.Labels["namespace"] == ns && tg.Labels["pod"] == "exporter"
			})
		})
		// Prometheus marks a gone target's series stale when its next scrape would have
		// been, up to two scrape intervals (30 s each) after it went.
		eventually(t, 3*time.Minute, "the deleted pod's gauge stale", func() bool {
			got, err := prom.query(gauge)
			return err == nil && len(got) == 0
		})
	})

	t.Run("a busy pod's CPU counter rises", func(t *testing.T) {
		q := fmt.Sprintf(`container_cpu_usage_seconds_total{job="kubelet-cadvisor",namespace=%q,pod="busy",container="spin"}`, ns)
		var first float64
		eventually(t, 2*time.Minute, "the busy pod's CPU counter in Prometheus", func() bool {
			got, err := prom.query(q)
			if err != nil || len(got) != 1 {
				return false
			}
			first = got[0].Value
			return true
		})
		eventually(t, 2*time.Minute, "the busy pod's CPU counter rising", func() bool {
			got, err := prom.query(q)
			return err == nil && len(got) == 1 && got[0].Value > first
		})
	})

	t.Run("the kubelet's cadvisor and probe series", func(t *testing.T) {
		// One series or more per query, each above zero where the query says so.
		for _, q := range []string{
			fmt.Sprintf(`container_memory_working_set_bytes{job="kubelet-cadvisor",namespace=%q,pod="busy",container="spin",image="minik8s/busybox:1.0"} > 0`, ns),
			fmt.Sprintf(`container_network_receive_packets_total{job="kubelet-cadvisor",namespace=%q,pod="busy",container="POD",interface="eth0"}`, ns),
			fmt.Sprintf(`container_fs_usage_bytes{job="kubelet-cadvisor",namespace=%q,pod="busy",container="spin"}`, ns),
			fmt.Sprintf(`container_start_time_seconds{job="kubelet-cadvisor",namespace=%q,pod="busy",container="spin"} > 0`, ns),
			`container_cpu_usage_seconds_total{job="kubelet-cadvisor",id="/"} > 0`,
			`machine_memory_bytes{job="kubelet-cadvisor"} > 0`,
			fmt.Sprintf(`prober_probe_total{job="kubelet-probes",namespace=%q,pod="busy",container="spin",probe_type="Readiness",result="successful"} > 0`, ns),
		} {
			eventually(t, 2*time.Minute, q, func() bool {
				got, err := prom.query(q)
				return err == nil && len(got) > 0
			})
		}
	})

	t.Run("kubectl top node is the node's own usage", func(t *testing.T) {
		// The node runs more than pods (the control plane, Docker), so its own working set
		// is well above its pods' sum.
		type usage struct {
			Items []struct {
				Metadata   struct{ Name string } `json:"metadata"`
				Usage      map[string]string     `json:"usage"`
				Containers []struct {
					Usage map[string]string `json:"usage"`
				} `json:"containers"`
			} `json:"items"`
		}
		var last string
		eventually(t, 2*time.Minute, "the node's memory above its pods' sum", func() bool {
			var nodeUse, podUse usage
			if err := json.Unmarshal([]byte(real("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")), &nodeUse); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(real("get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods")), &podUse); err != nil {
				t.Fatal(err)
			}
			if len(nodeUse.Items) != len(nodes) {
				last = fmt.Sprintf("%d nodes measured", len(nodeUse.Items))
				return false
			}
			var pods int64
			for _, p := range podUse.Items {
				for _, c := range p.Containers {
					pods += quantity(t, c.Usage["memory"])
				}
			}
			node := quantity(t, nodeUse.Items[0].Usage["memory"])
			last = fmt.Sprintf("node %d bytes, pods %d bytes", node, pods)
			return node > pods+100<<20
		})
		t.Log(last)
		out := real("top", "node")
		if !strings.Contains(out, nodes[0]) {
			t.Errorf("kubectl top node:\n%s", out)
		}
	})

	t.Run("rules loaded and alerts answered", func(t *testing.T) {
		data, err := prom.get("/api/v1/rules", nil)
		if err != nil {
			t.Fatal(err)
		}
		var rules struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name   string `json:"name"`
					Health string `json:"health"`
					Error  string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := json.Unmarshal(data, &rules); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				names[r.Name] = true
				if r.Health == "err" {
					t.Errorf("rule %s in %s: %s", r.Name, g.Name, r.Error)
				}
			}
		}
		for _, want := range []string{"NodeDown", "PodCrashLooping", "FunctionErrorRate", "instance:node_cpu_utilisation:rate2m"} {
			if !names[want] {
				t.Errorf("rule %s not loaded (have %v)", want, names)
			}
		}
		if _, err := prom.get("/api/v1/alerts", nil); err != nil {
			t.Error(err)
		}
	})

	// All of the above without a restart of Prometheus.
	if now := prometheusState(); now != prometheusBefore {
		t.Errorf("Prometheus' pod and restarts went from %q to %q, want the same pod never restarted; its last state and events:\n%s\n%s",
			prometheusBefore, now,
			real("-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus", "-o", "jsonpath={.items[0].status.containerStatuses[0].lastState}"),
			real("-n", monitoringNS, "get", "events", "--field-selector", "involvedObject.kind=Pod"))
	}
}

// quantity parses a resource quantity ("2048Ki") to its integer value.
func quantity(t *testing.T, s string) int64 {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("quantity %q: %v", s, err)
	}
	return q.Value()
}

// TestMonitoringCluster installs the monitoring stack on a three-node cluster (scripts/
// monitoring.sh, as make cluster does): node-exporter runs on every node and Prometheus
// scrapes it and each kubelet; a node added with node.sh add becomes a target of both, with
// no restart of Prometheus.
func TestMonitoringCluster(t *testing.T) {
	c := startNetClusterWith(t, []string{"MINIK8S_MONITORING=1"}, "a", "b", "c")
	c.startControlPlane(t, nil, nil)
	c.run(t, []string{"KUBECONFIG_FILE=" + c.srv.kubeconfig(), "METRICS_HOST=" + c.hostIP}, "monitoring.sh", "install")
	prom := prometheusAPI{t: t, kubeconfig: c.srv.kubeconfig()}
	// upOn waits until the job has exactly one up target per node, on these nodes.
	upOn := func(job string, nodes ...string) {
		t.Helper()
		want := slices.Clone(nodes)
		slices.Sort(want)
		var have []string
		defer func() {
			if t.Failed() {
				t.Logf("%s up on %v; the stack's pods:\n%s", job, have, c.kubectlReal.run(t, "-n", monitoringNS, "get", "pods", "-o", "wide").stdout)
				t.Log(c.kubectlReal.run(t, "-n", monitoringNS, "get", "events", "--sort-by=.lastTimestamp").stdout)
			}
		}()
		eventually(t, 4*time.Minute, job+" up on "+strings.Join(want, ", "), func() bool {
			ts, err := prom.targets()
			if err != nil {
				return false
			}
			have = have[:0]
			for _, tg := range ts {
				if tg.Labels["job"] == job && tg.Health == "up" {
					have = append(have, tg.Labels["node"])
				}
			}
			slices.Sort(have)
			return slices.Equal(have, want)
		})
	}
	nodes := []string{c.names["a"], c.names["b"], c.names["c"]}
	for _, job := range []string{"node-exporter", "kubelet", "kubeproxy"} {
		upOn(job, nodes...)
	}
	uid := strings.TrimSpace(c.kubectlReal.ok(t, "-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus",
		"-o", "jsonpath={.items[0].metadata.uid}").stdout)

	added := "node-d"
	c.nodeSh(t, "add", added)
	c.started = append(c.started, c.loadNode(t, added))
	for _, job := range []string{"node-exporter", "kubelet"} {
		upOn(job, append(nodes, added)...)
	}
	if now := strings.TrimSpace(c.kubectlReal.ok(t, "-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus",
		"-o", "jsonpath={.items[0].metadata.uid}").stdout); now != uid {
		t.Errorf("Prometheus' pod changed from %s to %s", uid, now)
	}
}
