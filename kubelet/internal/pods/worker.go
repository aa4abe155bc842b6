package pods

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/pods/status"
	"minik8s.io/kubelet/internal/runtime"
)

// worker serialises the syncs of one pod.
type worker struct {
	uid types.UID

	// Guarded by Manager.mu.
	desired *corev1.Pod
	removed bool
	running bool
	wake    chan struct{}

	// Owned by the worker goroutine.
	ips map[string]string // sandbox id -> pod IP
	// podIP is the last address the pod had; status keeps it after the pod's sandbox stops.
	podIP string
	// tornDown names sandboxes already detached from the network.
	tornDown map[string]bool
	// pullFailed is when each container's image pull last failed.
	pullFailed map[string]time.Time
	// createFailed is each container's newest attempt when it left no container to report.
	createFailed map[string]createFailure
	// inspected caches the runtime's full record of each container by id (see Manager.list).
	inspected map[string]runtime.Container
	// volumesAt is when the pod's file volumes were last written in full (see
	// Manager.refreshVolumes).
	volumesAt time.Time
	// created is set once this worker has created a container: from then on only the
	// runtime knows what the pod has.
	created bool
}

func newWorker(uid types.UID) *worker {
	return &worker{
		uid:          uid,
		wake:         make(chan struct{}, 1),
		ips:          map[string]string{},
		tornDown:     map[string]bool{},
		pullFailed:   map[string]time.Time{},
		createFailed: map[string]createFailure{},
		inspected:    map[string]runtime.Container{},
	}
}

// createFailure is an attempt to create a container that failed: when, and what its status
// says until the next attempt.
type createFailure struct {
	at      time.Time
	waiting status.Waiting
}

// signal asks for a sync; signals arriving during a sync collapse into one more sync.
func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// outcome is what a sync leaves for the next one.
type outcome struct {
	// after is when to sync again at the latest (a back-off ending, a retry).
	after time.Duration
	// done means the pod is gone: containers removed and, for deleted pods, finalized.
	done      bool
	finalized bool
}

func (o *outcome) soon(d time.Duration) {
	if d > 0 && (o.after == 0 || d < o.after) {
		o.after = d
	}
}

func (m *Manager) runWorker(ctx context.Context, w *worker) {
	for {
		pod, removed := m.desired(w)
		out := m.syncPod(ctx, w, pod, removed)
		if ctx.Err() != nil {
			return
		}
		if out.done && m.retire(w, out.finalized) {
			return
		}
		wait := m.cfg.ResyncPeriod
		if out.after > 0 && out.after < wait {
			wait = out.after
		}
		timer := m.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-w.wake:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// syncState collects, during one sync, why containers wait and when to come back.
type syncState struct {
	waiting map[string]status.Waiting
	out     outcome
	// created are the containers this sync created (and started, or tried to); disrupted is
	// set when it stopped or removed any. Together they say whether the pod's containers must
	// be listed again to report its status.
	created   []string
	disrupted bool
}
