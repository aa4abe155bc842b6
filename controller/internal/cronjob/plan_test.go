package cronjob

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The fake clock: the CronJob was made at 10:00:30 UTC.
var created = time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)

func at(hhmmss string) time.Time {
	t, err := time.Parse("15:04:05", hhmmss)
	if err != nil {
		panic(err)
	}
	return time.Date(2026, 1, 1, t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

func ptr[T any](v T) *T { return &v }

func newCronJob(schedule string, mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr(false),
			SuccessfulJobsHistoryLimit: ptr(int32(3)), FailedJobsHistoryLimit: ptr(int32(1)),
		},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func lastScheduled(t time.Time) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = ptr(metav1.NewTime(t)) }
}

func withActive(jobs ...*batchv1.Job) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		for _, j := range jobs {
			cj.Status.Active = append(cj.Status.Active, jobRef(j))
		}
	}
}

func ownedJob(name string, cond batchv1.JobConditionType, start time.Time) *batchv1.Job {
	yes := true
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
		CreationTimestamp: metav1.NewTime(start),
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "hello", UID: "cj-uid", Controller: &yes}}}}
	j.Status.StartTime = ptr(metav1.NewTime(start))
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		j.Status.CompletionTime = ptr(metav1.NewTime(start.Add(10 * time.Second)))
	}
	return j
}

func names(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

func reasons(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func TestDecide(t *testing.T) {
	running := ownedJob("hello-29454361", "", at("10:01:00"))
	done := ownedJob("hello-29454361", batchv1.JobComplete, at("10:01:00"))
	cases := []struct {
		name        string
		cj          *batchv1.CronJob
		jobs        []*batchv1.Job
		now         time.Time
		wantCreate  string // name of the Job made, "" for none
		wantDelete  []string
		wantEvents  []string
		wantRequeue time.Duration
		wantActive  int
	}{
		{name: "before the first time", cj: newCronJob("* * * * *"), now: at("10:00:40"),
			wantRequeue: 20*time.Second + nextScheduleDelta},
		{name: "at the first time", cj: newCronJob("* * * * *"), now: at("10:01:00"),
			wantCreate: "hello-29454361", wantRequeue: time.Minute + nextScheduleDelta},
		{name: "a time already run", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00")), withActive(running)),
			jobs: []*batchv1.Job{running}, now: at("10:01:30"), wantRequeue: 30*time.Second + nextScheduleDelta, wantActive: 1},
		{name: "several missed: one catch-up run, the latest", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00"))), now: at("10:05:10"),
			wantCreate: "hello-29454365", wantRequeue: 50*time.Second + nextScheduleDelta},
		{name: "missed past the starting deadline", cj: newCronJob("*/5 * * * *", lastScheduled(at("10:00:00")),
			func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr(int64(30)) }), now: at("10:05:40"),
			wantRequeue: 4*time.Minute + 20*time.Second + nextScheduleDelta},
		{name: "within the starting deadline", cj: newCronJob("*/5 * * * *", lastScheduled(at("10:00:00")),
			func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr(int64(60)) }), now: at("10:05:40"),
			wantCreate: "hello-29454365", wantRequeue: 4*time.Minute + 20*time.Second + nextScheduleDelta},
		{name: "too many missed", cj: newCronJob("* * * * *", lastScheduled(at("08:00:00"))), now: at("10:00:10"),
			wantCreate: "hello-29454360", wantEvents: []string{"TooManyMissedTimes"}, wantRequeue: 50*time.Second + nextScheduleDelta},
		{name: "suspended", cj: newCronJob("* * * * *", func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr(true) }), now: at("10:01:00")},
		{name: "forbid with one running", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00")), withActive(running),
			func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent }),
			jobs: []*batchv1.Job{running}, now: at("10:02:00"), wantEvents: []string{"JobAlreadyActive"}, wantRequeue: time.Minute + nextScheduleDelta, wantActive: 1},
		{name: "forbid after the run finished", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00")), withActive(done),
			func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent }),
			jobs: []*batchv1.Job{done}, now: at("10:02:00"), wantCreate: "hello-29454362", wantEvents: []string{"SawCompletedJob"},
			wantRequeue: time.Minute + nextScheduleDelta},
		{name: "replace deletes the running one", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00")), withActive(running),
			func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent }),
			jobs: []*batchv1.Job{running}, now: at("10:02:00"), wantCreate: "hello-29454362", wantDelete: []string{"hello-29454361"},
			wantRequeue: time.Minute + nextScheduleDelta},
		{name: "allow runs alongside", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00")), withActive(running)),
			jobs: []*batchv1.Job{running}, now: at("10:02:00"), wantCreate: "hello-29454362", wantRequeue: time.Minute + nextScheduleDelta, wantActive: 1},
		{name: "a running job not made by the controller is reported", cj: newCronJob("* * * * *", lastScheduled(at("10:01:00"))),
			jobs: []*batchv1.Job{running}, now: at("10:01:30"), wantEvents: []string{"UnexpectedJob"}, wantRequeue: 30*time.Second + nextScheduleDelta},
		{name: "history limits", cj: newCronJob("0 * * * *", lastScheduled(at("10:00:00")), func(cj *batchv1.CronJob) {
			cj.Spec.SuccessfulJobsHistoryLimit = ptr(int32(1))
		}), jobs: []*batchv1.Job{
			ownedJob("s2", batchv1.JobComplete, at("09:00:00")), ownedJob("s1", batchv1.JobComplete, at("08:00:00")), ownedJob("s3", batchv1.JobComplete, at("10:00:00")),
			ownedJob("f1", batchv1.JobFailed, at("07:00:00")), ownedJob("f2", batchv1.JobFailed, at("07:30:00")),
		}, now: at("10:30:00"), wantDelete: []string{"s1", "s2", "f1"}, wantRequeue: 30*time.Minute + nextScheduleDelta},
		{name: "time zone", cj: newCronJob("0 12 * * *", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Asia/Tokyo") }),
			now: at("10:00:40"), wantRequeue: 16*time.Hour + 59*time.Minute + 20*time.Second + nextScheduleDelta},
		{name: "unparseable", cj: newCronJob("61 * * * *"), now: at("10:01:00"), wantEvents: []string{"UnparseableSchedule"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.cj, tc.jobs, tc.now)
			var gotCreate string
			if p.Create != nil {
				gotCreate = p.Create.Name
			}
			if gotCreate != tc.wantCreate {
				t.Errorf("created %q, want %q", gotCreate, tc.wantCreate)
			}
			if diff := cmp.Diff(tc.wantDelete, names(p.Delete)); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, reasons(p.Events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if p.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, tc.wantRequeue)
			}
			if len(p.Status.Active) != tc.wantActive {
				t.Errorf("active %v, want %d", p.Status.Active, tc.wantActive)
			}
		})
	}
}

// The Job made carries the template, the scheduled time in the CronJob's time zone and the
// CronJob as controller; once created it is active and its time the last scheduled.
func TestJobFromTemplate(t *testing.T) {
	cj := newCronJob("0 12 * * *", func(cj *batchv1.CronJob) {
		cj.Spec.TimeZone = ptr("Asia/Tokyo")
		cj.CreationTimestamp = metav1.NewTime(at("02:00:00"))
		cj.Spec.JobTemplate.Labels = map[string]string{"app": "hello"}
		cj.Spec.JobTemplate.Spec.Template.Spec.Containers = []corev1.Container{{Name: "hello", Image: "busybox"}}
	})
	p := Decide(cj, nil, at("03:00:05"))
	if p.Create == nil {
		t.Fatal("no job made at 12:00 Tokyo")
	}
	j := p.Create
	if got := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-01-01T12:00:00+09:00" {
		t.Errorf("scheduled timestamp %q", got)
	}
	if j.Labels["app"] != "hello" || j.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("template not carried: %+v", j)
	}
	if uid, ok := ownerUID(j); !ok || uid != cj.UID {
		t.Errorf("owner %v", j.OwnerReferences)
	}
	j.UID = "new"
	p.Created(j)
	if len(p.Status.Active) != 1 || !p.Status.LastScheduleTime.Time.Equal(at("03:00:00")) {
		t.Errorf("status after create: %+v", p.Status)
	}
	// lastSuccessfulTime follows a completed active Job.
	done := ownedJob(j.Name, batchv1.JobComplete, at("03:00:00"))
	cj.Status = p.Status
	cj.Status.Active[0].UID = done.UID
	p = Decide(cj, []*batchv1.Job{done}, at("03:01:00"))
	if len(p.Status.Active) != 0 || p.Status.LastSuccessfulTime == nil || !p.Status.LastSuccessfulTime.Time.Equal(at("03:00:10")) {
		t.Errorf("status after completion: %+v", p.Status)
	}
}
