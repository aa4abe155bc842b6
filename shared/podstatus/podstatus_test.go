package podstatus

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadyAndAvailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	withReady := func(status corev1.ConditionStatus, since time.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)},
		}}}
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		minReady  int32
		ready     bool
		available bool
		wait      time.Duration
	}{
		{"no conditions", &corev1.Pod{}, 0, false, false, 0},
		{"not ready", withReady(corev1.ConditionFalse, now.Add(-time.Hour)), 0, false, false, 0},
		{"ready, no minReadySeconds", withReady(corev1.ConditionTrue, now), 0, true, true, 0},
		{"ready 5 s of 10", withReady(corev1.ConditionTrue, now.Add(-5*time.Second)), 10, true, false, 5 * time.Second},
		{"ready 10 s of 10", withReady(corev1.ConditionTrue, now.Add(-10*time.Second)), 10, true, true, 0},
	} {
		if got := Ready(tc.pod); got != tc.ready {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.ready)
		}
		avail, wait := Available(tc.pod, tc.minReady, now)
		if avail != tc.available || wait != tc.wait {
			t.Errorf("%s: Available = %v, %s; want %v, %s", tc.name, avail, wait, tc.available, tc.wait)
		}
		if since := ReadySince(tc.pod); tc.ready == since.IsZero() {
			t.Errorf("%s: ReadySince = %v with ready %v", tc.name, since, tc.ready)
		}
	}
	done := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	if !Finished(done) || Finished(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}) {
		t.Errorf("Finished: Failed should be finished, Running not")
	}
}
