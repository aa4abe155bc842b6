package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/stats"
	"minik8s.io/kubelet/internal/streaming"
)

// Usage reads the node's and its containers' usage from the kernel (a stats.Reader).
type Usage = stats.Snapshotter

// Containers finds the runtime containers of pods the kubelet runs.
type Containers interface {
	// ContainerID returns the id of a pod's container: the current one, or the one before it
	// when previous is set. It wraps runtime.ErrNotFound when there is none.
	ContainerID(ctx context.Context, namespace, pod, container string, previous bool) (string, error)
	// PodContainers lists, per pod, the running containers to sample for stats.
	PodContainers(ctx context.Context) ([]PodRef, error)
	// SandboxID returns the id of a pod's running sandbox, the container holding its network
	// namespace. It wraps runtime.ErrNotFound when there is none.
	SandboxID(ctx context.Context, namespace, pod string) (string, error)
}

// PodRef names a pod and its running containers.
type PodRef struct {
	Namespace, Name, UID string
	// Containers maps container names to runtime ids.
	Containers map[string]string
}

// Identity is who a bearer token belongs to, as the apiserver says.
type Identity struct {
	User   string
	Groups []string
}

// TokenReviewer says who a bearer token belongs to; ok is false for a token the apiserver
// refuses. The kubelet asks the apiserver.
type TokenReviewer func(ctx context.Context, token string) (id Identity, ok bool, err error)

type identityKey struct{}

// identityFrom is the caller auth put in a request's context.
func identityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// Config is what the server needs.
type Config struct {
	Node       string
	Runtime    runtime.Runtime
	Containers Containers
	Review     TokenReviewer
	Registry   *prometheus.Registry
	// Usage, when set, serves /metrics/resource and /metrics/cadvisor and puts the node's
	// own CPU and memory in /stats/summary.
	Usage Usage
	// Probes, when set, is served at /metrics/probes (prober_probe_total).
	Probes *prometheus.Registry
	Logger *slog.Logger
	Now    func() time.Time
	// DialNetNS connects to a port on 127.0.0.1 in the network namespace at a path NetNS
	// returned; nil means streaming.DialNetNS (the fake runtime has its own).
	DialNetNS func(ctx context.Context, path string, port uint16) (net.Conn, error)
	// StreamIdleTimeout and StreamCreationTimeout tune exec, attach and port-forward
	// sessions; zero means the kubelet's 4 hours and 30 seconds.
	StreamIdleTimeout     time.Duration
	StreamCreationTimeout time.Duration
}

// Server serves the kubelet API. Build it with New; serve Handler().
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	streams *streaming.Server
	mu      sync.Mutex
	valid   map[string]accepted // by token
}

// accepted is a token the apiserver accepted: whose it is, and until when it is trusted.
type accepted struct {
	id    Identity
	until time.Time
}

// tokenTTL is how long an accepted token is trusted before asking the apiserver again.
const tokenTTL = time.Minute

// New builds the server; it starts nothing.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.DialNetNS == nil {
		cfg.DialNetNS = streaming.DialNetNS
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), valid: map[string]accepted{},
		streams: streaming.New(streaming.Config{IdleTimeout: cfg.StreamIdleTimeout,
			CreationTimeout: cfg.StreamCreationTimeout, Logger: cfg.Logger})}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	s.mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", s.auth(http.HandlerFunc(s.logs)))
	s.mux.Handle("GET /stats/summary", s.auth(http.HandlerFunc(s.summary)))
	// GET for WebSockets, POST for SPDY, as kubectl sends them.
	for _, method := range []string{"GET", "POST"} {
		s.mux.Handle(method+" /exec/{namespace}/{pod}/{container}", s.auth(http.HandlerFunc(s.exec)))
		s.mux.Handle(method+" /attach/{namespace}/{pod}/{container}", s.auth(http.HandlerFunc(s.attach)))
		s.mux.Handle(method+" /portForward/{namespace}/{pod}", s.auth(http.HandlerFunc(s.portForward)))
	}
	s.mux.Handle("GET /images/{ref...}", s.auth(http.HandlerFunc(s.imagePresent)))
	s.mux.Handle("POST /images", s.auth(http.HandlerFunc(s.loadImage)))
	if cfg.Registry != nil {
		s.mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})))
	}
	if cfg.Usage != nil {
		s.handleCollector("/metrics/resource", stats.ResourceCollector(cfg.Usage, cfg.Logger))
		s.handleCollector("/metrics/cadvisor", stats.CadvisorCollector(cfg.Usage, cfg.Logger))
	}
	if cfg.Probes != nil {
		s.mux.Handle("GET /metrics/probes", s.auth(promhttp.HandlerFor(cfg.Probes, promhttp.HandlerOpts{})))
	}
	return s
}

// handleCollector serves one collector alone at path, as the kubelet serves each of its
// metrics endpoints from its own registry.
func (s *Server) handleCollector(path string, c prometheus.Collector) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	s.mux.Handle("GET "+path, s.auth(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})))
}

// CloseStreams ends the exec, attach and port-forward sessions, which an HTTP server's
// shutdown leaves running since their connections were taken over.
func (s *Server) CloseStreams() { s.streams.Close() }

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		now := s.cfg.Now()
		s.mu.Lock()
		acc, known := s.valid[token]
		s.mu.Unlock()
		if !known || now.After(acc.until) {
			id, ok, err := s.cfg.Review(r.Context(), token)
			if err != nil {
				http.Error(w, "cannot verify the token with the apiserver: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			if !ok {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			acc = accepted{id: id, until: now.Add(tokenTTL)}
			s.mu.Lock()
			s.valid[token] = acc
			s.mu.Unlock()
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, acc.id))
		next.ServeHTTP(w, r)
	})
}

// logs streams a container's output with the options `kubectl logs` sends.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := runtime.LogOptions{Follow: q.Get("follow") == "true", Timestamps: q.Get("timestamps") == "true", Tail: -1}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("tailLines must be a non-negative integer, not %q", v), http.StatusBadRequest)
			return
		}
		opts.Tail = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			http.Error(w, fmt.Sprintf("sinceSeconds must be a positive integer, not %q", v), http.StatusBadRequest)
			return
		}
		opts.Since = s.cfg.Now().Add(-time.Duration(n) * time.Second)
	}
	var limit int64 = -1
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			http.Error(w, fmt.Sprintf("limitBytes must be a positive integer, not %q", v), http.StatusBadRequest)
			return
		}
		limit = n
	}
	ns, pod, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	id, err := s.cfg.Containers.ContainerID(r.Context(), ns, pod, ctr, q.Get("previous") == "true")
	if errors.Is(err, runtime.ErrNotFound) {
		msg := fmt.Sprintf("container %q in pod %q is not available", ctr, pod)
		if q.Get("previous") == "true" {
			msg = fmt.Sprintf("previous terminated container %q in pod %q not found", ctr, pod)
		}
		http.Error(w, msg, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	rc, err := s.cfg.Runtime.Logs(r.Context(), id, opts)
	if err != nil {
		http.Error(w, fmt.Sprintf("read logs of container %q: %v", ctr, err), http.StatusInternalServerError)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain")
	var src io.Reader = rc
	if limit > 0 {
		src = io.LimitReader(rc, limit)
	}
	flusher, _ := w.(http.Flusher)
	// Headers go out at once: a follower must not wait for the first line to see the stream.
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// Summary is the stats summary, in the shape of the kubelet's /stats/summary (the parts used).
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats names the node and, where the kubelet reads the kernel, its own usage (not the
// sum of its pods').
type NodeStats struct {
	NodeName string       `json:"nodeName"`
	CPU      *CPUStats    `json:"cpu,omitempty"`
	Memory   *MemoryStats `json:"memory,omitempty"`
}

// PodStats are the summed usage of a pod's containers.
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	Containers []ContainerStats `json:"containers"`
	CPU        CPUStats         `json:"cpu"`
	Memory     MemoryStats      `json:"memory"`
}

// PodReference identifies a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// ContainerStats is one container's usage.
type ContainerStats struct {
	Name   string      `json:"name"`
	CPU    CPUStats    `json:"cpu"`
	Memory MemoryStats `json:"memory"`
}

// CPUStats is cumulative CPU time.
type CPUStats struct {
	Time                 time.Time `json:"time"`
	UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
}

// MemoryStats is the working set.
type MemoryStats struct {
	Time            time.Time `json:"time"`
	WorkingSetBytes uint64    `json:"workingSetBytes"`
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.Summary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sum)
}

// Summary samples every running container of every pod.
func (s *Server) Summary(ctx context.Context) (*Summary, error) {
	out := &Summary{Node: NodeStats{NodeName: s.cfg.Node}, Pods: []PodStats{}}
	var ps *PodStats
	node, err := s.walk(ctx, func(p PodRef) {
		out.Pods = append(out.Pods, PodStats{PodRef: PodReference{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Containers: []ContainerStats{}})
		ps = &out.Pods[len(out.Pods)-1]
	}, func(_ PodRef, name, _ string, st runtime.Stats) {
		cs := ContainerStats{Name: name,
			CPU:    CPUStats{Time: st.Timestamp, UsageCoreNanoSeconds: st.CPUUsageNanos},
			Memory: MemoryStats{Time: st.Timestamp, WorkingSetBytes: st.MemoryWorkingSetBytes}}
		ps.Containers = append(ps.Containers, cs)
		ps.CPU.UsageCoreNanoSeconds += st.CPUUsageNanos
		ps.Memory.WorkingSetBytes += st.MemoryWorkingSetBytes
		if st.Timestamp.After(ps.CPU.Time) {
			ps.CPU.Time, ps.Memory.Time = st.Timestamp, st.Timestamp
		}
	})
	if err != nil {
		return nil, err
	}
	if node != nil {
		out.Node.CPU = &CPUStats{Time: node.Time, UsageCoreNanoSeconds: node.CPU.UsageNanos}
		out.Node.Memory = &MemoryStats{Time: node.Time, WorkingSetBytes: node.Memory.WorkingSet}
	}
	return out, nil
}

// ContainerSample is one running container's stats under its runtime id.
type ContainerSample struct {
	// ID names the container instance: a restarted container has a new one, so its CPU
	// counter starting again from zero is never mistaken for a drop.
	ID    string
	Stats runtime.Stats
}

// ContainerSamples samples every running container of every pod, for the node's usage.
func (s *Server) ContainerSamples(ctx context.Context) ([]ContainerSample, error) {
	var out []ContainerSample
	_, err := s.walk(ctx, func(PodRef) {}, func(_ PodRef, _, id string, st runtime.Stats) {
		out = append(out, ContainerSample{ID: id, Stats: st})
	})
	return out, err
}

// walk calls pod for each pod and then container for each of its containers the runtime
// still has stats for. The runtime is asked for every container at once (statsConcurrency
// at a time): Docker takes a third of a second per container on a busy machine, and a
// node's pods one after the other took longer than a metrics scrape waits. With a Usage
// reader it walks one reading instead, and returns the node's figures of that reading (nil
// otherwise).
func (s *Server) walk(ctx context.Context, pod func(PodRef), container func(p PodRef, name, id string, st runtime.Stats)) (*stats.Node, error) {
	if s.cfg.Usage != nil {
		return s.walkUsage(ctx, pod, container)
	}
	pods, err := s.cfg.Containers.PodContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	type sample struct {
		name, id string
		st       runtime.Stats
		err      error
	}
	samples := make([][]sample, len(pods))
	sem := make(chan struct{}, statsConcurrency)
	var wg sync.WaitGroup
	for i, p := range pods {
		names := make([]string, 0, len(p.Containers))
		for name := range p.Containers {
			names = append(names, name)
		}
		sort.Strings(names)
		samples[i] = make([]sample, len(names))
		for j, name := range names {
			samples[i][j] = sample{name: name, id: p.Containers[name]}
			wg.Add(1)
			go func(sm *sample) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				sm.st, sm.err = s.cfg.Runtime.Stats(ctx, sm.id)
			}(&samples[i][j])
		}
	}
	wg.Wait()
	for i, p := range pods {
		pod(p)
		for _, sm := range samples[i] {
			if errors.Is(sm.err, runtime.ErrNotFound) {
				continue
			}
			if sm.err != nil {
				return nil, fmt.Errorf("stats of %s/%s %s: %w", p.Namespace, p.Name, sm.name, sm.err)
			}
			container(p, sm.name, sm.id, sm.st)
		}
	}
	return nil, nil
}

// walkUsage is walk from one reading of the kernel's figures: a hundred pods take it tens
// of milliseconds where Docker's stats API takes seconds. Sandboxes are left out, as from the
// runtime's list.
func (s *Server) walkUsage(ctx context.Context, pod func(PodRef), container func(p PodRef, name, id string, st runtime.Stats)) (*stats.Node, error) {
	snap, err := s.cfg.Usage.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var cur *PodRef
	for _, c := range snap.Containers {
		if c.Sandbox {
			continue
		}
		if cur == nil || cur.UID != c.PodUID {
			cur = &PodRef{Namespace: c.Namespace, Name: c.Pod, UID: c.PodUID}
			pod(*cur)
		}
		container(*cur, c.Container, c.ID, runtime.Stats{Timestamp: c.Time, CPUUsageNanos: c.Stats.CPU.UsageNanos,
			MemoryWorkingSetBytes: c.Stats.Memory.WorkingSet})
	}
	return &snap.Node, nil
}

// statsConcurrency bounds the runtime's stats calls in flight for one summary.
const statsConcurrency = 8
