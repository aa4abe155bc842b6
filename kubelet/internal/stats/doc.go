// Package stats reads the node's and its pods' containers' usage from cgroups and proc (as
// cAdvisor does inside the kubelet) and exports it as the kubelet's /metrics/resource and
// /metrics/cadvisor series.
package stats
