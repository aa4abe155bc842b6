package ttlafterfinished

import (
	"context"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/workqueue/clock"
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

// TestReconcile: a Job whose TTL has not run out is looked at again when it will; one whose
// TTL has run out in the API's copy too is deleted in the foreground, guarded by its uid.
func TestReconcile(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := int32(30)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pi", UID: "job-uid"},
		Spec:   batchv1.JobSpec{TTLSecondsAfterFinished: &ttl},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}}}
	jobs := fake.New(func() *batchv1.Job { return &batchv1.Job{} })
	job = jobs.Put(job)
	inf := informer.New(informer.Config{Name: "jobs", NoWatch: true, ListerWatcher: informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &batchv1.JobList{ListMeta: metav1.ListMeta{ResourceVersion: job.ResourceVersion}, Items: []batchv1.Job{*job}}, nil
		}}})
	clk := clock.NewFake(t0.Add(10 * time.Second))
	c := New(Config{JobInformer: inf, Jobs: jobs, Options: reconcile.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)}})
	go func() { _ = inf.Start(t.Context()) }()
	if !informer.WaitForSync(t.Context(), inf.HasSynced) {
		t.Fatal("cache did not sync")
	}

	res, err := c.Reconcile(t.Context(), "ns/pi")
	if err != nil || res.RequeueAfter != 20*time.Second {
		t.Errorf("before the TTL: %+v, %v; want a look again in 20s", res, err)
	}
	if calls := jobs.Calls(); len(calls) != 0 {
		t.Errorf("before the TTL: calls %+v, want none", calls)
	}

	clk.SetTime(t0.Add(30 * time.Second))
	if res, err := c.Reconcile(t.Context(), "ns/pi"); err != nil || res.RequeueAfter != 0 {
		t.Errorf("past the TTL: %+v, %v; want done", res, err)
	}
	dels := jobs.CallsOf(fake.VerbDelete)
	if len(dels) != 1 {
		t.Fatalf("past the TTL: %d deletes, want 1", len(dels))
	}
	o := dels[0].Options
	if o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationForeground ||
		o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != job.UID {
		t.Errorf("delete options %+v, want foreground with the Job's uid", o)
	}
	if _, ok := jobs.Object("ns", "pi"); ok {
		t.Error("the Job is still in the API")
	}
}
