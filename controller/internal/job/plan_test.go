package job

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newJob(completions, parallelism *int32, mode batchv1.CompletionMode) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pi", UID: "job-uid"},
		Spec: batchv1.JobSpec{Completions: completions, Parallelism: parallelism, BackoffLimit: ptr(int32(6)), CompletionMode: &mode,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: t0.Add(-time.Hour)}},
	}
}

// pod is a pod of the Job in phase, finished (or created) at t; index < 0 for none.
func pod(name string, phase corev1.PodPhase, t time.Time, index int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(t)},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: phase}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t)}}}}
	}
	if index >= 0 {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index)}
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func condition(st batchv1.JobStatus) string {
	for _, c := range st.Conditions {
		if c.Status == corev1.ConditionTrue {
			return string(c.Type) + "/" + c.Reason
		}
	}
	return ""
}

func TestDecide(t *testing.T) {
	nonIndexed := func(c, p int32) *batchv1.Job { return newJob(&c, &p, batchv1.NonIndexedCompletion) }
	cases := []struct {
		name string
		job  *batchv1.Job
		pods []*corev1.Pod
		// want
		create    int
		indexes   []int
		deleted   []string
		cond      string
		active    int32
		succeeded int32
		failed    int32
		completed string
		after     time.Duration
	}{
		{name: "new job starts parallelism pods", job: nonIndexed(3, 2), create: 2},
		{name: "never more than parallelism", job: nonIndexed(3, 2),
			pods:   []*corev1.Pod{pod("a", corev1.PodRunning, t0, -1), pod("b", corev1.PodRunning, t0, -1)},
			active: 2},
		{name: "only the completions left", job: nonIndexed(3, 2),
			pods:   []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, -1), pod("b", corev1.PodSucceeded, t0, -1), pod("c", corev1.PodRunning, t0, -1)},
			active: 1, succeeded: 2},
		{name: "one more after two successes", job: nonIndexed(3, 2),
			pods:   []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, -1), pod("b", corev1.PodSucceeded, t0, -1)},
			create: 1, succeeded: 2},
		{name: "completions reached", job: nonIndexed(3, 2),
			pods:      []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, -1), pod("b", corev1.PodSucceeded, t0, -1), pod("c", corev1.PodSucceeded, t0, -1)},
			succeeded: 3, cond: "Complete/CompletionsReached"},
		{name: "parallelism lowered: the youngest goes", job: nonIndexed(5, 1),
			pods:   []*corev1.Pod{pod("old", corev1.PodRunning, t0.Add(-time.Minute), -1), pod("young", corev1.PodRunning, t0, -1)},
			active: 2, deleted: []string{"young"}},
		{name: "first failure: back-off of 10 s", job: nonIndexed(1, 1),
			pods:   []*corev1.Pod{pod("a", corev1.PodFailed, t0.Add(-3*time.Second), -1)},
			failed: 1, after: 7 * time.Second},
		{name: "second failure: 20 s, not yet over", job: nonIndexed(1, 1),
			pods:   []*corev1.Pod{pod("a", corev1.PodFailed, t0.Add(-time.Minute), -1), pod("b", corev1.PodFailed, t0.Add(-15*time.Second), -1)},
			failed: 2, after: 5 * time.Second},
		{name: "back-off over: a new pod", job: nonIndexed(1, 1),
			pods:   []*corev1.Pod{pod("a", corev1.PodFailed, t0.Add(-time.Minute), -1), pod("b", corev1.PodFailed, t0.Add(-25*time.Second), -1)},
			failed: 2, create: 1},
		{name: "a success resets the back-off", job: nonIndexed(2, 1),
			pods:   []*corev1.Pod{pod("a", corev1.PodFailed, t0.Add(-time.Minute), -1), pod("b", corev1.PodSucceeded, t0.Add(-30*time.Second), -1)},
			failed: 1, succeeded: 1, create: 1},
		{name: "backoff limit exceeded", job: func() *batchv1.Job { j := nonIndexed(1, 2); j.Spec.BackoffLimit = ptr(int32(1)); return j }(),
			pods:   []*corev1.Pod{pod("a", corev1.PodFailed, t0, -1), pod("b", corev1.PodFailed, t0, -1), pod("c", corev1.PodRunning, t0, -1)},
			failed: 2, deleted: []string{"c"}, cond: "Failed/BackoffLimitExceeded"},
		{name: "OnFailure restarts count against the limit", job: func() *batchv1.Job {
			j := nonIndexed(1, 1)
			j.Spec.BackoffLimit = ptr(int32(2))
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			return j
		}(), pods: func() []*corev1.Pod {
			p := pod("a", corev1.PodRunning, t0, -1)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
			return []*corev1.Pod{p}
		}(), deleted: []string{"a"}, cond: "Failed/BackoffLimitExceeded"},
		{name: "active deadline exceeded", job: func() *batchv1.Job { j := nonIndexed(1, 1); j.Spec.ActiveDeadlineSeconds = ptr(int64(60)); return j }(),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, t0, -1)}, deleted: []string{"a"}, cond: "Failed/DeadlineExceeded"},
		{name: "active deadline ahead: wake up then", job: func() *batchv1.Job {
			j := nonIndexed(1, 1)
			j.Spec.ActiveDeadlineSeconds = ptr(int64(60))
			j.Status.StartTime = &metav1.Time{Time: t0.Add(-20 * time.Second)}
			return j
		}(), pods: []*corev1.Pod{pod("a", corev1.PodRunning, t0, -1)}, active: 1, after: 40 * time.Second},
		{name: "work queue: done when one succeeded and none runs", job: newJob(nil, ptr(int32(2)), batchv1.NonIndexedCompletion),
			pods: []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, -1), pod("b", corev1.PodSucceeded, t0, -1)}, succeeded: 2, cond: "Complete/CompletionsReached"},
		{name: "work queue: no new pods after a success", job: newJob(nil, ptr(int32(2)), batchv1.NonIndexedCompletion),
			pods: []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, -1), pod("b", corev1.PodRunning, t0, -1)}, succeeded: 1, active: 1},
		{name: "indexed: the missing indexes", job: newJob(ptr(int32(4)), ptr(int32(3)), batchv1.IndexedCompletion),
			pods:   []*corev1.Pod{pod("i1", corev1.PodSucceeded, t0, 1), pod("i3", corev1.PodRunning, t0, 3)},
			create: 2, indexes: []int{0, 2}, active: 1, succeeded: 1, completed: "1"},
		{name: "indexed: a duplicate index goes", job: newJob(ptr(int32(2)), ptr(int32(2)), batchv1.IndexedCompletion),
			pods:   []*corev1.Pod{pod("first", corev1.PodRunning, t0.Add(-time.Minute), 0), pod("dup", corev1.PodRunning, t0, 0), pod("done", corev1.PodSucceeded, t0, 1)},
			active: 2, succeeded: 1, completed: "1", deleted: []string{"dup"}},
		{name: "indexed: failed index retried after back-off", job: newJob(ptr(int32(2)), ptr(int32(2)), batchv1.IndexedCompletion),
			pods:   []*corev1.Pod{pod("f0", corev1.PodFailed, t0.Add(-11*time.Second), 0), pod("r1", corev1.PodRunning, t0, 1)},
			create: 1, indexes: []int{0}, active: 1, failed: 1},
		{name: "indexed: all indexes done", job: newJob(ptr(int32(3)), ptr(int32(3)), batchv1.IndexedCompletion),
			pods:      []*corev1.Pod{pod("a", corev1.PodSucceeded, t0, 0), pod("b", corev1.PodSucceeded, t0, 1), pod("c", corev1.PodSucceeded, t0, 2), pod("d", corev1.PodSucceeded, t0, 2)},
			succeeded: 3, completed: "0-2", cond: "Complete/CompletionsReached"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.job, tc.pods, t0)
			got := []any{p.Create, p.Indexes, names(p.Delete), condition(p.Status), p.Status.Active, p.Status.Succeeded, p.Status.Failed, p.Status.CompletedIndexes, p.After}
			want := []any{tc.create, tc.indexes, tc.deleted, tc.cond, tc.active, tc.succeeded, tc.failed, tc.completed, tc.after}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("create, indexes, deleted, condition, active, succeeded, failed, completedIndexes, after (-want +got):\n%s", diff)
			}
			if tc.cond == "Complete/CompletionsReached" && (p.Status.CompletionTime == nil || !p.Status.CompletionTime.Time.Equal(t0)) {
				t.Errorf("completionTime %v, want %v", p.Status.CompletionTime, t0)
			}
		})
	}
}

func TestDecideStartsTheClockAndStopsWhenFinished(t *testing.T) {
	j := newJob(ptr(int32(1)), ptr(int32(1)), batchv1.NonIndexedCompletion)
	j.Status.StartTime = nil
	p := Decide(j, nil, t0)
	if p.Status.StartTime == nil || !p.Status.StartTime.Time.Equal(t0) {
		t.Fatalf("startTime %v, want %v", p.Status.StartTime, t0)
	}
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	if p := Decide(j, []*corev1.Pod{pod("late", corev1.PodFailed, t0, -1)}, t0); p.Create != 0 || len(p.Delete) != 0 || p.Status.Failed != 1 {
		t.Fatalf("finished job: create %d delete %v failed %d", p.Create, names(p.Delete), p.Status.Failed)
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 6: 320 * time.Second, 7: 6 * time.Minute, 30: 6 * time.Minute} {
		if got := Backoff(failures); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

func TestIndexesRoundTrip(t *testing.T) {
	for _, s := range []string{"", "0", "1,3-5,7", "0-9"} {
		if got := formatIndexes(parseIndexes(s)); got != s {
			t.Errorf("formatIndexes(parseIndexes(%q)) = %q", s, got)
		}
	}
}

func TestPodFromTemplate(t *testing.T) {
	j := newJob(ptr(int32(3)), ptr(int32(3)), batchv1.IndexedCompletion)
	j.Spec.Template.Labels = map[string]string{"batch.kubernetes.io/job-name": "pi"}
	p := PodFromTemplate(j, 2)
	if p.GenerateName != "pi-2-" || p.Spec.Hostname != "pi-2" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "2" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || Index(p) != 2 {
		t.Errorf("indexed pod %s hostname %s labels %v annotations %v", p.GenerateName, p.Spec.Hostname, p.Labels, p.Annotations)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != EnvCompletionIndex || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", env)
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.UID != j.UID || ref.Kind != "Job" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v", ref)
	}
	if j.Spec.Template.Labels[batchv1.JobCompletionIndexAnnotation] != "" || len(j.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("PodFromTemplate changed the Job's template")
	}
}
