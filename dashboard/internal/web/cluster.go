package web

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeRow is one node of the overview.
type nodeRow struct {
	Name, Ready, InternalIP, Kubelet string
	CPUCapacity, MemoryCapacity      string
	Pods                             int
	// CPU and Memory are Prometheus' utilisation ratios; HasUsage says whether it had them.
	CPU, Memory float64
	HasUsage    bool
}

type overviewData struct {
	Nodes  []nodeRow
	Phases []phaseCount
	Pods   int
}

type phaseCount struct {
	Phase string
	Count int
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	p := &page{}
	d := overviewData{}
	nodes, err := s.cfg.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		p.fail("list nodes", err)
		nodes = &corev1.NodeList{}
	}
	pods, err := s.cfg.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		p.fail("list pods", err)
		pods = &corev1.PodList{}
	}
	perNode := map[string]int{}
	perPhase := map[string]int{}
	for _, pod := range pods.Items {
		perNode[pod.Spec.NodeName]++
		perPhase[string(pod.Status.Phase)]++
	}
	cpu := s.byLabel(ctx, p, "node", "instance:node_cpu_utilisation:rate2m")
	mem := s.byLabel(ctx, p, "node", "instance:node_memory_utilisation:ratio")
	for _, n := range nodes.Items {
		row := nodeRow{
			Name:           n.Name,
			Ready:          "Unknown",
			Kubelet:        n.Status.NodeInfo.KubeletVersion,
			CPUCapacity:    quantity(n.Status.Capacity, corev1.ResourceCPU),
			MemoryCapacity: quantity(n.Status.Capacity, corev1.ResourceMemory),
			Pods:           perNode[n.Name],
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				row.Ready = string(c.Status)
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				row.InternalIP = a.Address
			}
		}
		c, okc := cpu[n.Name]
		m, okm := mem[n.Name]
		row.CPU, row.Memory, row.HasUsage = c, m, okc || okm
		d.Nodes = append(d.Nodes, row)
	}
	slices.SortFunc(d.Nodes, func(a, b nodeRow) int { return cmp.Compare(a.Name, b.Name) })
	for _, phase := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
		d.Phases = append(d.Phases, phaseCount{phase, perPhase[phase]})
	}
	d.Pods = len(pods.Items)
	p.Data = d
	s.render(w, "overview", p)
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return ""
	}
	if name == corev1.ResourceMemory {
		return humanBytes(float64(q.Value()))
	}
	return q.String()
}

// age is how long ago t was, "" for the zero time.
func (s *Server) age(t metav1.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return s.cfg.Now().Sub(t.Time)
}
