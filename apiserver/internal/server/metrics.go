package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	requestTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "Requests served, by verb, resource and HTTP code.",
	}, []string{"verb", "resource", "code"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "Request latency by verb and resource (watches excluded).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"verb", "resource"})
	// Registry holds every apiserver metric; other packages register theirs here.
	Registry = prometheus.NewRegistry()
)

func init() {
	Registry.MustRegister(requestTotal, requestDuration,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
}

func metricsHandler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
}

func (s *Server) instrument(c *gin.Context) {
	start := time.Now()
	c.Next()
	verb, _ := c.Get(verbKey)
	res, _ := c.Get(resourceKey)
	v, _ := verb.(string)
	r, _ := res.(string)
	if v == "" {
		v = c.Request.Method
	}
	code := c.Writer.Status()
	requestTotal.WithLabelValues(v, r, strconv.Itoa(code)).Inc()
	if v != "watch" {
		requestDuration.WithLabelValues(v, r).Observe(time.Since(start).Seconds())
	}
	if code >= 500 {
		s.log.Warn("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "code", code)
	} else {
		s.log.Debug("request", "method", c.Request.Method, "path", c.Request.URL.Path, "code", code, "duration", time.Since(start))
	}
}
