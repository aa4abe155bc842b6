package proxier

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the proxier; a nil *Metrics records nothing.
type Metrics struct {
	syncs        *prometheus.HistogramVec
	errors       prometheus.Counter
	payloadBytes prometheus.Gauge
	rules        prometheus.Gauge
	lastSync     prometheus.Gauge
}

// NewMetrics registers the proxier's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "minik8s_kubeproxy_sync_duration_seconds",
			Help:    "Time to build and apply the ruleset, by kind: full (kernel read back first), partial, or unchanged (nothing restored).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"kind"}),
		errors:       prometheus.NewCounter(prometheus.CounterOpts{Name: "minik8s_kubeproxy_sync_errors_total", Help: "Syncs of the ruleset that failed."}),
		payloadBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minik8s_kubeproxy_restore_payload_bytes", Help: "Size of the last iptables-restore payload."}),
		rules:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "minik8s_kubeproxy_rules", Help: "Rules in kubeproxy's chains after the last sync."}),
		lastSync:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "minik8s_kubeproxy_last_sync_timestamp_seconds", Help: "When the ruleset was last applied successfully."}),
	}
	reg.MustRegister(m.syncs, m.errors, m.payloadBytes, m.rules, m.lastSync)
	return m
}

func (m *Metrics) observeSync(res Result, d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.errors.Inc()
		return
	}
	kind := "partial"
	switch {
	case res.Full:
		kind = "full"
	case res.PayloadBytes == 0:
		kind = "unchanged"
	}
	m.syncs.WithLabelValues(kind).Observe(d.Seconds())
	if res.PayloadBytes > 0 {
		m.payloadBytes.Set(float64(res.PayloadBytes))
	}
	m.rules.Set(float64(res.Rules))
	m.lastSync.SetToCurrentTime()
}
