// Package prom asks Prometheus' HTTP API for instant vectors (query) and range matrices
// (query_range), the two kinds of answer the dashboard draws.
package prom
