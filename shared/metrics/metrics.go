package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/workqueue"
)

// Results of a reconcile, the result label of minik8s_controller_sync_duration_seconds.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	// ResultRequeue is a reconcile that asked to be called again later without failing (it
	// waits for its own writes to reach the cache).
	ResultRequeue = "requeue"
)

// Buckets of the latency histograms: 100 µs to about 100 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 4, 11)

// Registry is a component's Prometheus registry with the metrics of this package in it (and
// Go's and the process's). Components register their own metrics in it too.
type Registry struct {
	*prometheus.Registry

	queueDepth    *prometheus.GaugeVec
	queueAdds     *prometheus.CounterVec
	queueRetries  *prometheus.CounterVec
	queueLatency  *prometheus.HistogramVec
	queueWork     *prometheus.HistogramVec
	syncDuration  *prometheus.HistogramVec
	syncErrors    *prometheus.CounterVec
	lists         *prometheus.CounterVec
	listObjects   *prometheus.GaugeVec
	lastList      *prometheus.GaugeVec
	busEvents     *prometheus.CounterVec
	busConnects   prometheus.Counter
	busLastAttach prometheus.Gauge
}

// NewRegistry returns a registry holding the metrics of this package.
func NewRegistry() *Registry {
	r := &Registry{
		Registry: prometheus.NewRegistry(),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "minik8s_workqueue_depth",
			Help: "Keys ready to be processed, by queue."}, []string{"name"}),
		queueAdds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_workqueue_adds_total",
			Help: "Keys added that were not queued already, by queue."}, []string{"name"}),
		queueRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_workqueue_retries_total",
			Help: "Keys put back with their back-off after a failure, by queue."}, []string{"name"}),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "minik8s_workqueue_queue_duration_seconds",
			Help: "How long a key waited in the queue before a worker took it, by queue.", Buckets: latencyBuckets}, []string{"name"}),
		queueWork: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "minik8s_workqueue_work_duration_seconds",
			Help: "How long a worker held a key, by queue.", Buckets: latencyBuckets}, []string{"name"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "minik8s_controller_sync_duration_seconds",
			Help: "Duration of one reconcile of one key, by controller and result (success, error, requeue).", Buckets: latencyBuckets},
			[]string{"controller", "result"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_controller_sync_errors_total",
			Help: "Reconciles that failed (and were retried with back-off), by controller."}, []string{"controller"}),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_informer_lists_total",
			Help: "Lists of a resource by its informer, by result (success, error)."}, []string{"resource", "result"}),
		listObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "minik8s_informer_listed_objects",
			Help: "Objects in the informer's last successful list."}, []string{"resource"}),
		lastList: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "minik8s_informer_last_list_timestamp_seconds",
			Help: "When the informer last listed its resource successfully (Unix time)."}, []string{"resource"}),
		busEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "minik8s_informer_bus_events_total",
			Help: "Bus messages fed to an informer, by result: applied, stale (older than the cache or changing nothing), dropped (undecodable)."},
			[]string{"resource", "result"}),
		busConnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "minik8s_bus_connects_total",
			Help: "Times the bus consumer connected and bound its queue (the first time and every reconnect)."}),
		busLastAttach: prometheus.NewGauge(prometheus.GaugeOpts{Name: "minik8s_bus_last_connect_timestamp_seconds",
			Help: "When the bus consumer last connected (Unix time)."}),
	}
	r.MustRegister(r.queueDepth, r.queueAdds, r.queueRetries, r.queueLatency, r.queueWork, r.syncDuration, r.syncErrors,
		r.lists, r.listObjects, r.lastList, r.busEvents, r.busConnects, r.busLastAttach,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return r
}

// Queue returns the metrics of the work queue called name, for workqueue.Config.Metrics.
// A nil registry gives nil: no metrics.
func (r *Registry) Queue(name string) workqueue.Metrics {
	if r == nil {
		return nil
	}
	q := &queueMetrics{
		depth: r.queueDepth.WithLabelValues(name), adds: r.queueAdds.WithLabelValues(name),
		retries: r.queueRetries.WithLabelValues(name), latency: r.queueLatency.WithLabelValues(name),
		work: r.queueWork.WithLabelValues(name),
	}
	// Present from the start, so a scrape shows every queue even before its first key.
	q.depth.Set(0)
	return q
}

type queueMetrics struct {
	depth         prometheus.Gauge
	adds, retries prometheus.Counter
	latency, work prometheus.Observer
}

func (q *queueMetrics) Added()                 { q.adds.Inc() }
func (q *queueMetrics) Depth(n int)            { q.depth.Set(float64(n)) }
func (q *queueMetrics) Queued(d time.Duration) { q.latency.Observe(d.Seconds()) }
func (q *queueMetrics) Worked(d time.Duration) { q.work.Observe(d.Seconds()) }
func (q *queueMetrics) Retried()               { q.retries.Inc() }

// Controller records the reconciles of one controller. Its methods do nothing on nil.
type Controller struct {
	name     string
	duration *prometheus.HistogramVec
	errors   prometheus.Counter
}

// Controller returns the reconcile metrics of the controller called name; nil for a nil
// registry.
func (r *Registry) Controller(name string) *Controller {
	if r == nil {
		return nil
	}
	c := &Controller{name: name, duration: r.syncDuration, errors: r.syncErrors.WithLabelValues(name)}
	for _, res := range []string{ResultSuccess, ResultError, ResultRequeue} {
		r.syncDuration.WithLabelValues(name, res)
	}
	return c
}

// Observe records one reconcile that took d and ended with result (ResultSuccess,
// ResultError or ResultRequeue).
func (c *Controller) Observe(d time.Duration, result string) {
	if c == nil {
		return
	}
	c.duration.WithLabelValues(c.name, result).Observe(d.Seconds())
	if result == ResultError {
		c.errors.Inc()
	}
}

// Informers returns the metrics of a component's informers, for
// informer.FactoryConfig.Metrics; nil for a nil registry.
func (r *Registry) Informers() informer.Metrics {
	if r == nil {
		return nil
	}
	return informerMetrics{r}
}

type informerMetrics struct{ r *Registry }

func (m informerMetrics) Listed(resource string, objects int, err error) {
	if err != nil {
		m.r.lists.WithLabelValues(resource, "error").Inc()
		return
	}
	m.r.lists.WithLabelValues(resource, "success").Inc()
	m.r.listObjects.WithLabelValues(resource).Set(float64(objects))
	m.r.lastList.WithLabelValues(resource).SetToCurrentTime()
}

func (m informerMetrics) BusEvent(resource, result string) {
	m.r.busEvents.WithLabelValues(resource, result).Inc()
}

// BusConnected records a connect of the bus consumer (its OnConnect); nothing on nil.
func (r *Registry) BusConnected() {
	if r == nil {
		return
	}
	r.busConnects.Inc()
	r.busLastAttach.SetToCurrentTime()
}
