// Package web serves the dashboard: server-rendered pages of the cluster's nodes, workloads,
// pods, functions and events read from the apiserver, and JSON series from Prometheus'
// query_range for the pages' plots.
package web
