package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Writer writes a pod's status subresource with the pod's resourceVersion as a precondition
// and returns the resourceVersion the write produced ("" when the pod is gone). A Conflict
// error means the copy was stale; the write is retried on a later sync.
type Writer interface {
	UpdateStatus(ctx context.Context, pod *corev1.Pod) (string, error)
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
	// version is the resourceVersion the write produced.
	version string
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
	// The pod comes from a cache that learns of our own writes only when they come back
	// over the bus: a write made from it right after the last one would fail with a
	// Conflict, again and again while a container keeps changing. The newer of the two
	// versions is the one to write against.
	p.ResourceVersion = newer(pod.ResourceVersion, last.version)
	version, err := m.writer.UpdateStatus(ctx, p)
	if err != nil {
		return false, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.mu.Lock()
	m.last[pod.UID] = written{status: *st.DeepCopy(), wire: want, version: version}
	m.mu.Unlock()
	return true, nil
}

// newer returns the later of two resourceVersions. minik8s' resourceVersions are etcd
// revisions, which only grow; one that is not a number is taken as it is.
func newer(cached, wrote string) string {
	c, errC := strconv.ParseUint(cached, 10, 64)
	w, errW := strconv.ParseUint(wrote, 10, 64)
	if errC != nil || errW != nil || c >= w {
		return cached
	}
	return wrote
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
