package status

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type writer struct {
	writes []*corev1.Pod
	err    error
}

func (w *writer) UpdateStatus(_ context.Context, pod *corev1.Pod) error {
	if w.err != nil {
		return w.err
	}
	w.writes = append(w.writes, pod.DeepCopy())
	return nil
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
