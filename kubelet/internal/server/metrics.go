package server

import "github.com/prometheus/client_golang/prometheus"

var nodeNameDesc = prometheus.NewDesc("kubelet_node_name",
	"The node's name. The count is always 1.", []string{"node"}, nil)

// nodeNameCollector exports kubelet_node_name. Containers' usage is at /metrics/resource
// and /metrics/cadvisor, as the kubelet has it.
type nodeNameCollector struct{ node string }

// NewNodeNameCollector exports the node's name as kubelet_node_name.
func NewNodeNameCollector(node string) prometheus.Collector { return nodeNameCollector{node: node} }

func (c nodeNameCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodeNameDesc }

func (c nodeNameCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(nodeNameDesc, prometheus.GaugeValue, 1, c.node)
}
