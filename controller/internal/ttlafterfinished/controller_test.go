package ttlafterfinished

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpiry(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := int32(30)
	finished := func(typ batchv1.JobConditionType, status corev1.ConditionStatus) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: &ttl},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(t0)}}}}
	}
	cases := []struct {
		name string
		job  *batchv1.Job
		at   time.Time
		ok   bool
	}{
		{"complete", finished(batchv1.JobComplete, corev1.ConditionTrue), t0.Add(30 * time.Second), true},
		{"failed", finished(batchv1.JobFailed, corev1.ConditionTrue), t0.Add(30 * time.Second), true},
		{"not finished", finished(batchv1.JobSuspended, corev1.ConditionTrue), time.Time{}, false},
		{"condition false", finished(batchv1.JobComplete, corev1.ConditionFalse), time.Time{}, false},
		{"no ttl", &batchv1.Job{Status: finished(batchv1.JobComplete, corev1.ConditionTrue).Status}, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := Expiry(tc.job)
			if ok != tc.ok || !at.Equal(tc.at) {
				t.Errorf("Expiry = %v %v, want %v %v", at, ok, tc.at, tc.ok)
			}
		})
	}
}
