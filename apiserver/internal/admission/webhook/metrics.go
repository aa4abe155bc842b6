package webhook

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	admissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_admission_webhook_admission_duration_seconds",
		Help:    "Admission webhook latency in seconds, by webhook name, type (validating or admit), operation and whether the write was rejected.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
	}, []string{"name", "type", "operation", "rejected"})
	rejectionCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_admission_webhook_rejection_count",
		Help: "Admission webhook rejections, by webhook name, type, operation, error type (calling_webhook_error, no_error, apiserver_internal_error) and the code the webhook answered with.",
	}, []string{"name", "type", "operation", "error_type", "rejection_code"})
)

// Collectors are the plugin's metrics, for the apiserver's /metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{admissionDuration, rejectionCount}
}

// Error types of rejections, as upstream labels them.
const (
	errCalling  = "calling_webhook_error"
	errNone     = "no_error"
	errInternal = "apiserver_internal_error"
)

func observe(name, typ, op string, took time.Duration, rejected bool) {
	admissionDuration.WithLabelValues(name, typ, op, strconv.FormatBool(rejected)).Observe(took.Seconds())
}

func observeRejection(name, typ, op, errType string, code int32) {
	rejectionCount.WithLabelValues(name, typ, op, errType, strconv.Itoa(int(code))).Inc()
}
