package monsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/stats"
	mclient "minik8s.io/shared/client"
)

// CadvisorConfig says how many pods to run on the node and how often to ask.
type CadvisorConfig struct {
	Kubeconfig string
	Pods       int
	Requests   int
	Image      string
}

// CadvisorDefaults are the flags' defaults.
var CadvisorDefaults = CadvisorConfig{Pods: 100, Requests: 30, Image: "minik8s/pause:1.0"}

// Endpoint is one kubelet path's latencies through the apiserver's nodes/proxy.
type Endpoint struct {
	Path    string
	What    string
	Latency stats.Summary
	Bytes   int
	Series  int
}

// CadvisorReport is one run.
type CadvisorReport struct {
	Node       string
	Pods       int
	Containers int
	Endpoints  []Endpoint
}

// RunCadvisor starts cfg.Pods pods on make up's node, then asks the kubelet's usage
// endpoints through the apiserver one after the other, cfg.Requests times each, with
// /metrics (the kubelet's own series, no sampling) as the baseline of the path's cost.
func RunCadvisor(ctx context.Context, cfg CadvisorConfig, log *slog.Logger) (*CadvisorReport, error) {
	mu, cleanup, err := cluster.ConnectMakeUp(ctx, cfg.Kubeconfig, "cadvisor", "bench-cadvisor", log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	nodes, err := mclient.MustFor[*corev1.Node, *corev1.NodeList](mu.API).List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("the cadvisor suite wants make up's one node, found %d", len(nodes.Items))
	}
	node := nodes.Items[0].Name
	pods := mclient.MustFor[*corev1.Pod, *corev1.PodList](mu.API)
	grace := int64(0)
	for i := range cfg.Pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%03d", i), Namespace: mu.Namespace},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "idle", Image: cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent}}},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create pod %s: %w", p.Name, err)
		}
	}
	log.Info("waiting for the pods to run", "pods", cfg.Pods)
	if err := cluster.Until(ctx, 10*time.Minute, 2*time.Second, "every pod running", func() (bool, error) {
		list, err := pods.List(ctx, mu.Namespace, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == cfg.Pods, nil
	}); err != nil {
		return nil, err
	}
	rep := &CadvisorReport{Node: node, Pods: cfg.Pods}
	for _, ep := range []Endpoint{
		{Path: "/metrics", What: "the kubelet's own series (baseline: the path without sampling)"},
		{Path: "/metrics/cadvisor", What: "every container from cgroups and proc"},
		{Path: "/metrics/resource", What: "the same reading, metrics-server's series"},
		{Path: "/stats/summary", What: "every app container, as kubectl top reads them"},
	} {
		path := "/api/v1/nodes/" + node + "/proxy" + ep.Path
		var lat []time.Duration
		for i := 0; i <= cfg.Requests; i++ {
			start := time.Now()
			body, err := mu.API.Get().AbsPath(path).Accept("*/*").Do(ctx)
			if err != nil {
				return rep, fmt.Errorf("GET %s: %w", path, err)
			}
			if i == 0 {
				continue // warm-up: connections, the first inspection of each container
			}
			lat = append(lat, time.Since(start))
			ep.Bytes = len(body)
			ep.Series = countSeries(body)
		}
		ep.Latency = stats.Summarize(lat)
		if ep.Path == "/metrics/cadvisor" {
			rep.Containers = countContainers(ctx, mu.API, path)
		}
		log.Info("measured", "path", ep.Path, "latency", ep.Latency.String())
		rep.Endpoints = append(rep.Endpoints, ep)
	}
	return rep, nil
}

// countSeries counts the sample lines of a text exposition (0 for JSON).
func countSeries(body []byte) int {
	n := 0
	for line := range bytes.Lines(body) {
		if len(line) > 0 && line[0] != '#' && line[0] != '{' && line[0] != '\n' {
			n++
		}
	}
	return n
}

// countContainers counts the containers /metrics/cadvisor reports, by their memory series.
func countContainers(ctx context.Context, api *mclient.Client, path string) int {
	body, err := api.Get().AbsPath(path).Accept("*/*").Do(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for line := range bytes.Lines(body) {
		if bytes.HasPrefix(line, []byte("container_memory_working_set_bytes{")) && !bytes.Contains(line, []byte(`id="/"`)) {
			n++
		}
	}
	return n
}

// Print writes the report as a Markdown table.
func (r *CadvisorReport) Print(w io.Writer) {
	fmt.Fprintf(w, "%d idle pods on node %s (%d containers with their sandboxes); each path asked through the apiserver's nodes/proxy, one request at a time.\n\n",
		r.Pods, r.Node, r.Containers)
	fmt.Fprintln(w, "| path | what | p50 | p90 | p99 | series | KiB | p50 vs /metrics |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var base time.Duration
	for _, e := range r.Endpoints {
		if e.Path == "/metrics" {
			base = e.Latency.P50
		}
		ratio := "n/a"
		if base > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(e.Latency.P50)/float64(base))
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %d | %d | %s |\n", e.Path, e.What, stats.Millis(e.Latency.P50),
			stats.Millis(e.Latency.P90), stats.Millis(e.Latency.P99), e.Series, e.Bytes>>10, ratio)
	}
	fmt.Fprintln(w)
}
