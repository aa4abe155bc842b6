package gateway

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type gatewayMetrics struct {
	calls      *prometheus.CounterVec
	duration   prometheus.Histogram
	coldStarts prometheus.Counter
}

func newMetrics(r prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_serverless_gateway_calls_total",
			Help: "Function calls answered by the gateway, by HTTP status code."}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "minik8s_serverless_gateway_call_duration_seconds",
			Help: "Time from a call's arrival to its answer, waiting for a pod included.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}),
		coldStarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "minik8s_serverless_gateway_cold_starts_total",
			Help: "Calls that arrived when their function had no ready pod and waited for one."}),
	}
	if r != nil {
		r.MustRegister(m.calls, m.duration, m.coldStarts)
	}
	return m
}

func (m *gatewayMetrics) observe(code int, d time.Duration) {
	m.calls.WithLabelValues(strconv.Itoa(code)).Inc()
	m.duration.Observe(d.Seconds())
}
