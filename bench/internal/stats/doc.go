// Package stats summarises latency samples (mean and nearest-rank percentiles)
// and rates, the figures every benchmark of the control plane reports.
package stats
