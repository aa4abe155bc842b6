package prober

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// Kind is a probe's purpose.
type Kind string

// The three probe kinds.
const (
	Liveness  Kind = "liveness"
	Readiness Kind = "readiness"
	Startup   Kind = "startup"
)

// Result of a probe worker so far.
type Result int

// Results. A liveness probe starts as Success, readiness as Failure, startup as Unknown.
const (
	Unknown Result = iota
	Success
	Failure
)

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Target is one running container to probe.
type Target struct {
	Pod         *corev1.Pod
	PodIP       string
	Container   *corev1.Container
	ContainerID string
	StartedAt   time.Time
	// WasReady seeds the readiness result for a container that was already ready before the
	// kubelet restarted, so adoption does not flap the Ready condition.
	WasReady bool
}

// Config configures a Manager.
type Config struct {
	Exec  Execer
	Clock clock.Clock
	// OnChange is called with the pod uid whenever a result changes.
	OnChange func(podUID string)
	Recorder Recorder
	Logger   *slog.Logger
	// Results, when set, counts each probe run (NewResultCounter); a container's series go
	// when its workers stop.
	Results *prometheus.CounterVec
}

// NewResultCounter is the kubelet's prober_probe_total, served at /metrics/probes.
func NewResultCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
}

// Manager owns the probe workers of all pods. Safe for concurrent use.
type Manager struct {
	cfg  Config
	log  *slog.Logger
	http *http.Client

	mu      sync.Mutex
	workers map[workerKey]*worker
	results map[resultKey]Result
	wg      sync.WaitGroup
}

type workerKey struct {
	podUID    string
	container string
	kind      Kind
}

type resultKey struct {
	containerID string
	kind        Kind
}

// New returns a Manager; workers start with Sync.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func(string) {}
	}
	return &Manager{
		cfg: cfg,
		log: cfg.Logger.With("component", "prober"),
		http: &http.Client{
			Transport: &http.Transport{
				DisableKeepAlives: true,
				// Kubernetes does not verify probe certificates: the pod's certificate is not
				// the kubelet's to trust.
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 {
					return http.ErrUseLastResponse
				}
				return nil
			},
		},
		workers: map[workerKey]*worker{},
		results: map[resultKey]Result{},
	}
}

// Sync makes the pod's probe workers match its running containers: one worker per probe of
// each target, replaced when the container id changes, stopped when the container is gone.
// Workers live until ctx ends or they are stopped; Wait waits for them.
func (m *Manager) Sync(ctx context.Context, podUID string, targets []Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[workerKey]Target{}
	for _, t := range targets {
		for kind, p := range probesOf(t.Container) {
			if p != nil {
				want[workerKey{podUID, t.Container.Name, kind}] = t
			}
		}
	}
	for k, w := range m.workers {
		if k.podUID != podUID {
			continue
		}
		// A worker probes one container at one address: a new container, or the pod's
		// address learned late (a kubelet restarted before its node had a pod CIDR adopts
		// running pods without one), takes a new worker.
		if t, ok := want[k]; ok && t.ContainerID == w.target.ContainerID && t.PodIP == w.target.PodIP {
			delete(want, k)
			continue
		}
		m.stopLocked(k, w)
	}
	for k, t := range want {
		p := probesOf(t.Container)[k.kind]
		initial := Unknown
		switch k.kind {
		case Liveness:
			initial = Success
		case Readiness:
			initial = Failure
			if t.WasReady {
				initial = Success
			}
		}
		m.results[resultKey{t.ContainerID, k.kind}] = initial
		wctx, cancel := context.WithCancel(ctx)
		w := &worker{m: m, key: k, target: t, probe: p, cancel: cancel}
		m.workers[k] = w
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			w.run(wctx)
		}()
	}
}

// RemovePod stops every worker of the pod and forgets its results.
func (m *Manager) RemovePod(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if k.podUID == podUID {
			m.stopLocked(k, w)
		}
	}
}

func (m *Manager) stopLocked(k workerKey, w *worker) {
	w.cancel()
	delete(m.workers, k)
	delete(m.results, resultKey{w.target.ContainerID, k.kind})
}

// Wait blocks until every worker has returned (after ctx of Sync ended or RemovePod).
func (m *Manager) Wait() { m.wg.Wait() }

// Get is the current result of a container's probe; ok is false when it has no such probe.
func (m *Manager) Get(containerID string, kind Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[resultKey{containerID, kind}]
	return r, ok
}

func (m *Manager) set(w *worker, r Result) {
	m.mu.Lock()
	key := resultKey{w.target.ContainerID, w.key.kind}
	cur, ok := m.results[key]
	// A stopped worker's late result must not resurrect its entry.
	if m.workers[w.key] != w {
		m.mu.Unlock()
		return
	}
	m.results[key] = r
	m.mu.Unlock()
	if !ok || cur != r {
		m.cfg.OnChange(w.key.podUID)
	}
}

func probesOf(c *corev1.Container) map[Kind]*corev1.Probe {
	return map[Kind]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe}
}
