package clusterdns

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the DNS server; a nil *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	forward  prometheus.Histogram
}

// NewMetrics registers the server's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minik8s_kubeproxy_dns_requests_total",
			Help: "DNS queries answered, by result: local, nxdomain (in the cluster domain), forwarded, servfail.",
		}, []string{"result"}),
		forward: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minik8s_kubeproxy_dns_forward_duration_seconds",
			Help:    "Time to get an answer from the upstream servers.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	reg.MustRegister(m.requests, m.forward)
	return m
}

func (m *Metrics) observeRequest(result string) {
	if m != nil {
		m.requests.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) observeForward(d time.Duration) {
	if m != nil {
		m.forward.Observe(d.Seconds())
	}
}
