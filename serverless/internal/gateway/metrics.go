package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type gatewayMetrics struct {
	calls      *prometheus.CounterVec
	duration   prometheus.Histogram
	coldStarts *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_serverless_gateway_calls_total",
			Help: "Function calls answered by the gateway, by function and HTTP status code (calls to unknown functions have empty namespace and function labels)."},
			[]string{"namespace", "function", "code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "minik8s_serverless_gateway_call_duration_seconds",
			Help: "Time from a call's arrival to its answer, waiting for a pod included.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_serverless_gateway_cold_starts_total",
			Help: "Calls that arrived when their function had no ready pod and waited for one, by function."}, []string{"namespace", "function"}),
	}
	if r != nil {
		r.MustRegister(m.calls, m.duration, m.coldStarts)
	}
	return m
}

// observe counts an answered call. A 404 is a call to a function that does not exist: its
// name comes from the caller, so it is not a label (any path would make a new series).
func (m *gatewayMetrics) observe(namespace, function string, code int, d time.Duration) {
	if code == http.StatusNotFound {
		namespace, function = "", ""
	}
	m.calls.WithLabelValues(namespace, function, strconv.Itoa(code)).Inc()
	m.duration.Observe(d.Seconds())
}
