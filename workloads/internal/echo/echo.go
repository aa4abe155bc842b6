package echo

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
)

// Reply is the JSON body of GET /.
type Reply struct {
	Hostname     string              `json:"hostname"`
	PodIP        string              `json:"podIP,omitempty"`
	PodName      string              `json:"podName,omitempty"`
	PodNamespace string              `json:"podNamespace,omitempty"`
	NodeName     string              `json:"nodeName,omitempty"`
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	Query        string              `json:"query,omitempty"`
	RemoteAddr   string              `json:"remoteAddr"`
	Headers      map[string][]string `json:"headers"`
}

// Identity is what the server says about itself; it is fixed at start.
type Identity struct {
	Hostname     string
	PodIP        string
	PodName      string
	PodNamespace string
	NodeName     string
}

// IdentityFromEnv reads the downward-API variables a pod manifest sets (POD_IP, POD_NAME,
// POD_NAMESPACE, NODE_NAME). Without POD_IP the first non-loopback IPv4 stands in, so the
// image also says something useful under plain docker run.
func IdentityFromEnv(getenv func(string) string, hostname string, addrs []net.Addr) Identity {
	id := Identity{
		Hostname:     hostname,
		PodIP:        getenv("POD_IP"),
		PodName:      getenv("POD_NAME"),
		PodNamespace: getenv("POD_NAMESPACE"),
		NodeName:     getenv("NODE_NAME"),
	}
	if id.PodIP == "" {
		id.PodIP = firstIPv4(addrs)
	}
	return id
}

func firstIPv4(addrs []net.Addr) string {
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if ip4 := ip.To4(); ip4 != nil && !ip4.IsLoopback() {
			return ip4.String()
		}
	}
	return ""
}

// Handler serves GET / (and any other path) with a Reply, MetricsPath with its own metrics,
// and /healthz for probes. POST
// /healthz/fail and /healthz/ok switch /healthz between 500 and 200, so liveness and readiness
// tests can make a running pod unhealthy without replacing it.
type Handler struct {
	id        Identity
	unhealthy atomic.Bool
	echoed    atomic.Int64
	mux       *http.ServeMux
}

// NewHandler returns a Handler that reports id.
func NewHandler(id Identity) *Handler {
	h := &Handler{id: id, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("POST /healthz/fail", func(w http.ResponseWriter, r *http.Request) {
		h.unhealthy.Store(true)
		h.healthz(w, r)
	})
	h.mux.HandleFunc("POST /healthz/ok", func(w http.ResponseWriter, r *http.Request) {
		h.unhealthy.Store(false)
		h.healthz(w, r)
	})
	h.mux.HandleFunc("GET "+MetricsPath, h.metrics)
	h.mux.HandleFunc("/", h.echo)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.unhealthy.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("unhealthy\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// MetricsPath serves the server's own metrics in Prometheus' text format, for scraping by
// annotation (prometheus.io/path); any other path, /metrics included, is echoed.
const MetricsPath = "/_echo/metrics"

// metrics writes echo_requests_total (requests echoed) and echo_healthy (1 while /healthz
// answers 200).
func (h *Handler) metrics(w http.ResponseWriter, _ *http.Request) {
	healthy := 1
	if h.unhealthy.Load() {
		healthy = 0
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = fmt.Fprintf(w, "# HELP echo_requests_total Requests this server echoed.\n# TYPE echo_requests_total counter\necho_requests_total %d\n"+
		"# HELP echo_healthy Whether /healthz answers 200 (1) or 500 (0).\n# TYPE echo_healthy gauge\necho_healthy %d\n",
		h.echoed.Load(), healthy)
}

func (h *Handler) echo(w http.ResponseWriter, r *http.Request) {
	h.echoed.Add(1)
	reply := Reply{
		Hostname:     h.id.Hostname,
		PodIP:        h.id.PodIP,
		PodName:      h.id.PodName,
		PodNamespace: h.id.PodNamespace,
		NodeName:     h.id.NodeName,
		Method:       r.Method,
		Path:         r.URL.Path,
		Query:        r.URL.RawQuery,
		RemoteAddr:   r.RemoteAddr,
		Headers:      r.Header,
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(reply) // a write error means the client left; nothing to tell it
}
