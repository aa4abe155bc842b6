package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	cpuDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative CPU time of a pod's container, from the runtime's stats.",
		[]string{"namespace", "pod", "container"}, nil)
	memDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Memory working set of a pod's container (usage minus inactive file cache).",
		[]string{"namespace", "pod", "container"}, nil)
	nodeNameDesc = prometheus.NewDesc("kubelet_node_name",
		"The node's name. The count is always 1.", []string{"node"}, nil)
)

// usageCollector samples the stats summary at scrape time, so /metrics and /stats/summary
// always agree and nothing is sampled when nobody asks.
type usageCollector struct{ s *Server }

// NewUsageCollector exports per-container CPU and memory of s's pods as Prometheus metrics,
// and the node's name as kubelet_node_name.
func NewUsageCollector(s *Server) prometheus.Collector { return usageCollector{s: s} }

func (c usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cpuDesc
	ch <- memDesc
	ch <- nodeNameDesc
}

func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(nodeNameDesc, prometheus.GaugeValue, 1, c.s.cfg.Node)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sum, err := c.s.Summary(ctx)
	if err != nil {
		if c.s.cfg.Logger != nil {
			c.s.cfg.Logger.Warn("collecting container usage", "err", err)
		}
		return
	}
	for _, p := range sum.Pods {
		for _, ct := range p.Containers {
			ch <- prometheus.NewMetricWithTimestamp(ct.CPU.Time, prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue,
				float64(ct.CPU.UsageCoreNanoSeconds)/1e9, p.PodRef.Namespace, p.PodRef.Name, ct.Name))
			ch <- prometheus.NewMetricWithTimestamp(ct.Memory.Time, prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue,
				float64(ct.Memory.WorkingSetBytes), p.PodRef.Namespace, p.PodRef.Name, ct.Name))
		}
	}
}
