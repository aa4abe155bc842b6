package status

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// writer is an API of one pod: a write needs the current resourceVersion and bumps it.
type writer struct {
	writes []*corev1.Pod
	err    error
	// version is the pod's resourceVersion in the API; 0 takes whatever is sent.
	version uint64
}

func (w *writer) UpdateStatus(_ context.Context, pod *corev1.Pod) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	if w.version != 0 {
		if pod.ResourceVersion != strconv.FormatUint(w.version, 10) {
			return "", fmt.Errorf("resourceVersion %s, the API has %d: %w", pod.ResourceVersion, w.version, apierror.ErrConflict)
		}
		w.version++
		pod = pod.DeepCopy()
		pod.ResourceVersion = strconv.FormatUint(w.version, 10)
	}
	w.writes = append(w.writes, pod.DeepCopy())
	return pod.ResourceVersion, nil
}

func TestManagerWritesOnlyChanges(t *testing.T) {
	w := &writer{}
	m := NewManager(w)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: "7"}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5"}

	steps := []struct {
		name  string
		pod   *corev1.Pod
		st    corev1.PodStatus
		err   error
		wrote bool
	}{
		{"first status is written", p, running, nil, true},
		{"same status again is not", p, running, nil, false},
		{"the API already holding it is not", func() *corev1.Pod { q := p.DeepCopy(); q.Status.Phase = corev1.PodSucceeded; return q }(),
			corev1.PodStatus{Phase: corev1.PodSucceeded}, nil, false},
		{"a failed write reports the error", p, corev1.PodStatus{Phase: corev1.PodFailed}, errors.New("conflict"), false},
		{"and is retried", p, corev1.PodStatus{Phase: corev1.PodFailed}, nil, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			w.err = s.err
			before := len(w.writes)
			wrote, err := m.Set(t.Context(), s.pod, s.st)
			if (err != nil) != (s.err != nil) {
				t.Fatalf("Set error = %v, want %v", err, s.err)
			}
			if wrote != s.wrote || (len(w.writes) > before) != s.wrote {
				t.Fatalf("wrote = %v (writes %d -> %d), want %v", wrote, before, len(w.writes), s.wrote)
			}
			if s.wrote {
				last := w.writes[len(w.writes)-1]
				if last.ResourceVersion != "7" || last.Status.Phase != s.st.Phase {
					t.Errorf("written pod rv=%s phase=%s, want rv 7 phase %s", last.ResourceVersion, last.Status.Phase, s.st.Phase)
				}
			}
		})
	}
}

// The pod the kubelet holds lags behind its own writes (they come back over the bus): a write
// made from that copy uses the version of the last write, not the stale one, so a container
// that keeps changing never makes the kubelet's writes conflict.
func TestManagerWritesOverItsOwnLastWrite(t *testing.T) {
	w := &writer{version: 7}
	m := NewManager(w)
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: "7"}}
	for i, reason := range []string{"RunContainerError", "CrashLoopBackOff", "StartError"} {
		st := corev1.PodStatus{Phase: corev1.PodPending, Reason: reason}
		if _, err := m.Set(t.Context(), cached, st); err != nil {
			t.Fatalf("write %d from the copy at version 7: %v", i+1, err)
		}
	}
	if len(w.writes) != 3 || w.version != 10 {
		t.Fatalf("%d writes, API at version %d; want 3 writes and version 10", len(w.writes), w.version)
	}

	// Someone else's write, once the cache has it, is the version to use.
	w.version = 15
	cached.ResourceVersion = "15"
	if _, err := m.Set(t.Context(), cached, corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatalf("write from a copy newer than the last write: %v", err)
	}
	// A change the cache has not seen yet is a real conflict, left for a later sync.
	w.version = 20
	if _, err := m.Set(t.Context(), cached, corev1.PodStatus{Phase: corev1.PodSucceeded}); !errors.Is(err, apierror.ErrConflict) {
		t.Fatalf("write over a change nobody has seen: err = %v, want a Conflict", err)
	}
}
