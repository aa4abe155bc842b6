package pods

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/kubelet/internal/pods/pleg"
	"minik8s.io/kubelet/internal/pods/prober"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/pods/status"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/backoff"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// StatusWriter writes a pod's status subresource (see status.Writer).
type StatusWriter = status.Writer

// Finalizer completes the deletion of a pod whose containers are gone: in the kubelet, a
// DELETE with gracePeriodSeconds=0.
type Finalizer interface {
	Finalize(ctx context.Context, pod *corev1.Pod) error
}

// Tokens hands out ServiceAccount tokens and forgets a pod's.
type Tokens interface {
	spec.Tokens
	DeleteServiceAccountToken(pod types.UID)
}

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Defaults for Config.
const (
	DefaultResyncPeriod = 10 * time.Second
	// defaultGrace is terminationGracePeriodSeconds' API default.
	defaultGrace = 30 * time.Second
	// retryDelay is how soon a sync that failed is tried again.
	retryDelay = time.Second
	// volumeRefreshPeriod is how often a running pod's configMap, secret, downwardAPI and
	// projected volumes are rewritten from their sources. A projected token lives at least
	// 10 minutes and is renewed after 80% of its life, so a refresh every minute lands at
	// least once in the 2 minutes before it expires.
	volumeRefreshPeriod = time.Minute
	// callTimeout bounds each runtime and network call of a sync, except stops, which get
	// their grace period on top.
	callTimeout = 2 * time.Minute
)

// Config wires a Manager to its node and its collaborators.
type Config struct {
	NodeName string
	HostIP   string
	// RootDir keeps per-pod files (emptyDir volumes and the like).
	RootDir      string
	SandboxImage string
	Lookup       spec.Lookup
	// ClusterDNS and ClusterDomain (--cluster-dns, --cluster-domain) and ResolvConf, the
	// node's resolver configuration (--resolv-conf), decide each pod's resolv.conf (see
	// package dns).
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string
	// Tokens hands out the ServiceAccount tokens of projected volumes (token.Manager); a
	// pod's are dropped when it is gone.
	Tokens Tokens
	// Services gives containers their Service variables (see spec.ServiceLister).
	Services spec.ServiceLister
	// Allocatable is the node's, for the downward API's limits of containers without any.
	Allocatable corev1.ResourceList

	Runtime   runtime.Runtime
	Network   network.Network
	Status    StatusWriter
	Finalizer Finalizer
	Recorder  Recorder
	// ProbeResults, when set, counts probe runs (prober.NewResultCounter).
	ProbeResults *prometheus.CounterVec
	Clock        clock.Clock
	Logger       *slog.Logger

	// RelistPeriod is the PLEG's; pleg.DefaultPeriod when zero.
	RelistPeriod time.Duration
	// ResyncPeriod is how often each pod is synced without any trigger.
	ResyncPeriod time.Duration
}

// Manager runs the pods bound to this node: one worker per pod, fed by desired-state updates,
// container lifecycle events and probe results.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	builder spec.Builder
	crash   *backoff.BackOff
	pulls   *backoff.BackOff
	images  *images
	status  *status.Manager
	prober  *prober.Manager
	pleg    *pleg.PLEG

	mu      sync.Mutex
	workers map[types.UID]*worker
	// finished holds pods finalized or cleaned up, so a late Update of the same uid does not
	// bring them back; Remove clears the entry.
	finished map[types.UID]bool
	synced   bool
	// spawn wakes Start's loop to launch workers for new pods.
	spawn chan struct{}
}

// New returns a Manager; nothing runs until Start.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	m := &Manager{
		cfg: cfg,
		log: cfg.Logger.With("component", "pods"),
		builder: spec.Builder{NodeName: cfg.NodeName, RootDir: cfg.RootDir, SandboxImage: cfg.SandboxImage, Lookup: cfg.Lookup,
			Tokens: cfg.Tokens, Services: cfg.Services, Allocatable: cfg.Allocatable},
		crash:    backoff.New(cfg.Clock),
		pulls:    backoff.New(cfg.Clock),
		images:   newImages(cfg.Clock),
		status:   status.NewManager(cfg.Status),
		workers:  map[types.UID]*worker{},
		finished: map[types.UID]bool{},
		spawn:    make(chan struct{}, 1),
	}
	m.prober = prober.New(prober.Config{
		Exec: cfg.Runtime, Clock: cfg.Clock, Recorder: cfg.Recorder, Logger: cfg.Logger,
		OnChange: func(uid string) { m.wake(types.UID(uid)) }, Results: cfg.ProbeResults,
	})
	m.pleg = pleg.New(pleg.Config{
		Lister: cfg.Runtime, Clock: cfg.Clock, Period: cfg.RelistPeriod, Logger: cfg.Logger,
		// Only this node's containers: another kubelet on the same engine owns the rest.
		Match:    nodeMatch(cfg.NodeName),
		OnEvent:  func(e pleg.Event) { m.wake(types.UID(e.PodUID)) },
		OnRelist: m.relisted,
	})
	return m
}

// Containers returns the containers of the PLEG's last relist and when it was made, for
// readers that can do with a second-old list rather than asking the runtime again.
func (m *Manager) Containers() ([]runtime.Container, time.Time) { return m.pleg.Containers() }

// Update sets the desired state of a pod bound to this node. A deletionTimestamp asks for the
// pod to be stopped and then finalized.
func (m *Manager) Update(pod *corev1.Pod) {
	pod = pod.DeepCopy()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished[pod.UID] {
		return
	}
	w, ok := m.workers[pod.UID]
	if !ok {
		w = newWorker(pod.UID)
		m.workers[pod.UID] = w
		m.kickLocked()
	}
	changed := w.desired == nil || w.removed || differ(w.desired, pod)
	w.desired = pod
	w.removed = false
	if changed {
		w.signal()
	}
}

// differ reports whether a new version of a pod asks for anything the old did not. A change of
// status alone, such as the kubelet's own status writes coming back, is no reason to sync:
// a pod whose container keeps failing would otherwise be synced again by its every report.
func differ(old, cur *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!apiequality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) ||
		!apiequality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds)
}

// Remove says the pod no longer exists in the API: its containers are stopped and removed,
// and nothing is finalized.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.finished, uid)
	if w, ok := m.workers[uid]; ok {
		w.removed = true
		w.signal()
	}
}

// MarkSynced says every desired pod has been passed to Update once (after the first relist
// from the API or the cache). Only then are containers of unknown pods removed: before it,
// an unknown pod may simply not have been listed yet.
func (m *Manager) MarkSynced() {
	m.mu.Lock()
	m.synced = true
	m.mu.Unlock()
}

// HasSynced reports whether MarkSynced was called.
func (m *Manager) HasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced
}

// LastRelist is when the PLEG last listed the runtime successfully, for health checks.
func (m *Manager) LastRelist() time.Time { return m.pleg.LastRelist() }

// Start runs the PLEG and the pod workers until ctx ends, then waits for them to return.
// Containers keep running when it returns: a restarted kubelet adopts them.
func (m *Manager) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.pleg.Start(ctx)
	}()
	m.kick()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			m.prober.Wait()
			return nil
		case <-m.spawn:
		}
		m.mu.Lock()
		for _, w := range m.workers {
			if w.running {
				continue
			}
			w.running = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.runWorker(ctx, w)
			}()
		}
		m.mu.Unlock()
	}
}

func (m *Manager) kick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kickLocked()
}

func (m *Manager) kickLocked() {
	select {
	case m.spawn <- struct{}{}:
	default:
	}
}

// wake asks the pod's worker for a sync.
func (m *Manager) wake(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.workers[uid]; ok {
		w.signal()
	}
}

// relisted starts cleanup workers for containers of pods nobody asked for.
func (m *Manager) relisted(uids map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.synced {
		return
	}
	for u := range uids {
		uid := types.UID(u)
		if _, ok := m.workers[uid]; ok {
			continue
		}
		m.log.Info("removing containers of unknown pod", "pod", u)
		w := newWorker(uid)
		w.removed = true
		m.workers[uid] = w
		m.kickLocked()
	}
}

// desired returns the pod's desired state (nil for an orphan) and whether it was removed.
func (m *Manager) desired(w *worker) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return w.desired, w.removed
}

// retire forgets a worker whose pod is gone for good. It fails, and the worker keeps going,
// when an Update brought a live version of the pod meanwhile.
func (m *Manager) retire(w *worker, finalized bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !w.removed && w.desired != nil && w.desired.DeletionTimestamp == nil {
		return false
	}
	delete(m.workers, w.uid)
	if finalized {
		m.finished[w.uid] = true
	}
	return true
}

type nopRecorder struct{}

func (nopRecorder) Eventf(kruntime.Object, string, string, string, ...any) {}

// nodeMatch selects the containers of one node; without a name (tests), all.
func nodeMatch(node string) map[string]string {
	if node == "" {
		return nil
	}
	return map[string]string{spec.LabelNode: node}
}
