package cronjob

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nextScheduleDelta is how long after a schedule time the controller looks again, so that the
// time has surely passed.
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is how many missed start times mean a clock or a schedule gone wrong rather
// than a controller that was down (Kubernetes' arbitrary 100).
const tooManyMissed = 100

// Event is one event the plan reports on the CronJob.
type Event struct {
	Type, Reason, Message string
}

// Plan is what one sync of a CronJob does.
type Plan struct {
	// Status is the CronJob's status after the plan.
	Status batchv1.CronJobStatus
	// Create is the Job to create, nil for none; on success it goes in status.active and its
	// schedule time in lastScheduleTime (see Created).
	Create *batchv1.Job
	// Delete are Jobs to delete: active ones replaced, finished ones past the history limits.
	Delete []*batchv1.Job
	// Events to report.
	Events []Event
	// RequeueAfter is when to sync again (the next schedule time); 0 for no need.
	RequeueAfter time.Duration
	// scheduled is the time Create runs for.
	scheduled time.Time
}

// Created records in the plan's status that its Job was made.
func (p *Plan) Created(job *batchv1.Job) {
	p.Status.Active = append(p.Status.Active, jobRef(job))
	t := metav1.NewTime(p.scheduled)
	p.Status.LastScheduleTime = &t
}

func (p *Plan) event(typ, reason, format string, args ...any) {
	p.Events = append(p.Events, Event{Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// Decide computes the sync of cj at now, given the Jobs it owns (jobs the cache has not yet
// seen but the API has are among them).
func Decide(cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) Plan {
	p := Plan{Status: *cj.Status.DeepCopy()}
	p.trackJobs(cj, jobs)
	if cj.DeletionTimestamp != nil {
		return p
	}
	loc := time.Local
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			p.event(corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return p
		}
		loc = l
	}
	sched, err := cron.ParseStandard(schedule(cj))
	if err != nil {
		p.event(corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return p
	}
	p.cleanUp(cj, jobs)
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return p
	}

	_, scheduled, missed, err := mostRecentScheduleTime(cj, now, sched, true)
	if err != nil {
		p.event(corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return p
	}
	if missed > tooManyMissed {
		p.event(corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	p.RequeueAfter = nextScheduleIn(cj, now, sched)
	if scheduled == nil {
		return p
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		p.event(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return p
	}
	name := JobName(cj, *scheduled)
	if activeNamed(p.Status.Active, name) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		return p
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(p.Status.Active) > 0 {
		p.event(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return p
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		for _, ref := range p.Status.Active {
			if j := byUID(jobs, ref.UID); j != nil {
				p.Delete = append(p.Delete, j)
			}
		}
		p.Status.Active = nil
	}
	p.Create = jobFor(cj, *scheduled, loc)
	p.scheduled = *scheduled
	return p
}

// schedule is the cron line the controller parses: the schedule in the CronJob's time zone.
func schedule(cj *batchv1.CronJob) string {
	if tz := cj.Spec.TimeZone; tz != nil {
		return "TZ=" + *tz + " " + cj.Spec.Schedule
	}
	return cj.Spec.Schedule
}

// trackJobs keeps status.active to the Jobs that run: a finished Job leaves it (a complete one
// moves lastSuccessfulTime), a Job gone leaves it.
func (p *Plan) trackJobs(cj *batchv1.CronJob, jobs []*batchv1.Job) {
	var active []corev1.ObjectReference
	for _, ref := range p.Status.Active {
		j := byUID(jobs, ref.UID)
		if j == nil {
			continue
		}
		if c, done := finished(j); done {
			p.event(corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, c)
			if c == batchv1.JobComplete && j.Status.CompletionTime != nil &&
				(p.Status.LastSuccessfulTime == nil || p.Status.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
				t := *j.Status.CompletionTime
				p.Status.LastSuccessfulTime = &t
			}
			continue
		}
		active = append(active, ref)
	}
	for _, j := range jobs {
		if _, done := finished(j); done || j.DeletionTimestamp != nil || activeUID(active, j.UID) {
			continue
		}
		// Made by hand (kubectl create job --from=cronjob/...), or by a sync whose status write
		// was lost: reported, not adopted, as Kubernetes does.
		p.event(corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
	}
	p.Status.Active = active
}

// cleanUp deletes the oldest finished Jobs beyond the history limits.
func (p *Plan) cleanUp(cj *batchv1.CronJob, jobs []*batchv1.Job) {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch c, done := finished(j); {
		case done && c == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case done:
			failed = append(failed, j)
		}
	}
	p.Delete = append(p.Delete, pastLimit(succeeded, cj.Spec.SuccessfulJobsHistoryLimit)...)
	p.Delete = append(p.Delete, pastLimit(failed, cj.Spec.FailedJobsHistoryLimit)...)
}

// pastLimit is the oldest of jobs (by start time, then creation) beyond limit; nothing
// without a limit.
func pastLimit(jobs []*batchv1.Job, limit *int32) []*batchv1.Job {
	if limit == nil || len(jobs) <= int(*limit) {
		return nil
	}
	sort.SliceStable(jobs, func(i, k int) bool { return started(jobs[i]).Before(started(jobs[k])) })
	return jobs[:len(jobs)-int(*limit)]
}

func started(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

// mostRecentScheduleTime is Kubernetes' reckoning of the latest schedule time not after now
// and after the last one run (or the CronJob's creation; with the deadline, not before now
// minus startingDeadlineSeconds), and roughly how many such times were missed. earliest is
// where it counted from.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (earliest time.Time, recent *time.Time, missed int64, err error) {
	earliest = cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; withDeadline && d != nil {
		if limit := now.Add(-time.Duration(*d) * time.Second); limit.After(earliest) {
			earliest = limit
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return earliest, nil, 0, nil
	}
	if now.Before(t2) {
		return earliest, &t1, 1, nil
	}
	// A schedule that never comes (31 February) gives zero times.
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return earliest, nil, 0, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	// Counting every missed time could take forever on a clock off by years: estimate the
	// number from the interval, and walk only the last few.
	missed = int64(now.Sub(t1).Seconds())/between + 1
	var last time.Time
	from := t1.Add(time.Duration((missed-2)*between) * time.Second)
	for t := sched.Next(from); !t.After(now); t = sched.Next(t) {
		last = t
	}
	if last.IsZero() {
		return earliest, nil, missed, nil
	}
	return earliest, &last, missed, nil
}

// nextScheduleIn is how long until the schedule time after the most recent one, plus a margin.
func nextScheduleIn(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	earliest, recent, _, err := mostRecentScheduleTime(cj, now, sched, false)
	if err != nil {
		return 0
	}
	if recent == nil {
		if earliest.IsZero() {
			earliest = now
		}
		recent = &earliest
	}
	return sched.Next(*recent).Add(nextScheduleDelta).Sub(now)
}

// JobName is the name of cj's Job for schedule time t: the minutes since the epoch, so a
// restarted controller makes the same name and never a second Job for one time.
func JobName(cj *batchv1.CronJob, t time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, t.Unix()/60)
}

// jobFor is the Job cj runs at scheduled: its template's labels, annotations and spec, the
// scheduled time in its time zone, and cj as controller.
func jobFor(cj *batchv1.CronJob, scheduled time.Time, loc *time.Location) *batchv1.Job {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	yes := true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        JobName(cj, scheduled),
			Namespace:   cj.Namespace,
			Labels:      tmpl.Labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: tmpl.Spec,
	}
}

// ownerUID is the CronJob controlling a Job, by its owner reference.
func ownerUID(j *batchv1.Job) (types.UID, bool) {
	for _, o := range j.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "CronJob" && strings.HasPrefix(o.APIVersion, "batch/") {
			return o.UID, true
		}
	}
	return "", false
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID,
		APIVersion: batchv1.SchemeGroupVersion.String(), ResourceVersion: j.ResourceVersion}
}

func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

func byUID(jobs []*batchv1.Job, uid types.UID) *batchv1.Job {
	for _, j := range jobs {
		if j.UID == uid {
			return j
		}
	}
	return nil
}

func activeUID(refs []corev1.ObjectReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func activeNamed(refs []corev1.ObjectReference, name string) bool {
	for _, r := range refs {
		if r.Name == name {
			return true
		}
	}
	return false
}
