package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Writer writes a pod's status subresource. The pod carries the resourceVersion last read;
// a Conflict error means the caller's copy is stale and the write is retried on a later sync.
type Writer interface {
	UpdateStatus(ctx context.Context, pod *corev1.Pod) error
}

// Manager writes statuses that changed. Safe for concurrent use by the pod workers.
type Manager struct {
	writer Writer
	mu     sync.Mutex
	last   map[types.UID]written
}

type written struct {
	status corev1.PodStatus
	wire   []byte
}

// NewManager returns a manager writing through w.
func NewManager(w Writer) *Manager {
	return &Manager{writer: w, last: map[types.UID]written{}}
}

// Set writes st for pod unless it equals what the API already holds or what was last written.
// It reports whether it wrote.
func (m *Manager) Set(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus) (bool, error) {
	want := encode(st)
	m.mu.Lock()
	last := m.last[pod.UID]
	m.mu.Unlock()
	// Compared as JSON: the API keeps times to the second, so a status read back equals the one
	// written only in its wire form.
	if bytes.Equal(want, encode(pod.Status)) || bytes.Equal(want, last.wire) {
		return false, nil
	}
	p := pod.DeepCopy()
	p.Status = st
	if err := m.writer.UpdateStatus(ctx, p); err != nil {
		return false, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.mu.Lock()
	m.last[pod.UID] = written{status: *st.DeepCopy(), wire: want}
	m.mu.Unlock()
	return true, nil
}

// Previous is the status to compute the next one from: the one last written for the pod, or
// the pod's own while nothing was written. The API's copy may lag behind our writes.
func (m *Manager) Previous(pod *corev1.Pod) corev1.PodStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.last[pod.UID]; ok {
		return *w.status.DeepCopy()
	}
	return *pod.Status.DeepCopy()
}

// Forget drops what is remembered of a pod.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, uid)
}

func encode(st corev1.PodStatus) []byte {
	b, err := json.Marshal(st)
	if err != nil {
		// PodStatus is plain data.
		panic(fmt.Sprintf("encode pod status: %v", err))
	}
	return b
}
