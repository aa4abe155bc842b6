package outbox

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	published prometheus.Counter
	errors    prometheus.Counter
	compacted prometheus.Counter
	skipped   prometheus.Counter
	lag       prometheus.Gauge
	revision  prometheus.Gauge
	leader    prometheus.Gauge
	elected   prometheus.Counter
	latency   prometheus.Histogram
}

func newMetrics() *metrics {
	const ns, sub = "minik8s", "outbox"
	return &metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "published_total", Help: "Changes published and confirmed by the broker."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "publish_errors_total", Help: "Failed publish attempts (each is retried)."}),
		compacted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "compacted_total", Help: "Times the next revision to publish was already compacted, so changes were lost."}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "skipped_total", Help: "Changes not published because their key or value could not be understood."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "lag_revisions", Help: "etcd revision minus the last published revision, as of the last watch response."}),
		revision: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "stored_revision", Help: "Published revision last stored in etcd."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "leader", Help: "1 while this process is the elected publisher."}),
		elected: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "elected_total", Help: "Times this process became the publisher."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "publish_latency_seconds", Help: "From receipt of a change on the watch to the broker's confirm.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.published, m.errors, m.compacted, m.skipped, m.lag, m.revision, m.leader, m.elected, m.latency} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
