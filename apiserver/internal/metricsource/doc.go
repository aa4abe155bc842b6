// Package metricsource measures pods' and nodes' resource usage from the kubelets'
// /stats/summary, as Kubernetes' metrics-server does: CPU as the rate of each container's
// cumulative CPU time between two scrapes, memory as the latest working set. It scrapes only
// while someone asks for metrics, so an idle cluster pays nothing for it.
package metricsource
