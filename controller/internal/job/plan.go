package job

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/podstatus"
)

// Back-off between re-creations after failures, as Kubernetes': 10 s, doubled per
// consecutive failure, at most 6 minutes.
const (
	BackoffBase = 10 * time.Second
	BackoffMax  = 6 * time.Minute
)

// Condition reasons and messages, Kubernetes' own.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonCompletionsReached   = "CompletionsReached"
)

// Plan is what a sync does to one Job.
type Plan struct {
	// Status is the Job's status as it should be.
	Status batchv1.JobStatus
	// Create is how many pods to make; Indexes, for an Indexed Job, which completion
	// indexes they get (len(Indexes) == Create).
	Create  int
	Indexes []int
	// Delete are active pods to remove: beyond parallelism, duplicates of an index, or all
	// of them once the Job has finished.
	Delete []*corev1.Pod
	// After, when positive, is when the Job should be looked at again whatever happens (a
	// back-off or the active deadline ending).
	After time.Duration
}

// Finished reports whether job has its Complete or Failed condition.
func Finished(job *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

// active pods run or wait to run: not finished and not being deleted.
func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !podstatus.Finished(p)
}

// Index is the completion index of an Indexed Job's pod, -1 when it has none.
func Index(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// finishedAt is when a pod finished: its containers' last termination, else its last
// condition change, else its creation.
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if s.State.Terminated != nil && s.State.Terminated.FinishedAt.After(t) {
			t = s.State.Terminated.FinishedAt.Time
		}
	}
	if !t.IsZero() {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	if !t.IsZero() {
		return t
	}
	return p.CreationTimestamp.Time
}

// Backoff is how long after the last failure the next pod may be made: 0 without failures
// since the last success, else BackoffBase * 2^(failures-1), at most BackoffMax.
func Backoff(consecutiveFailures int) time.Duration {
	if consecutiveFailures <= 0 {
		return 0
	}
	d := BackoffBase
	for i := 1; i < consecutiveFailures && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Counts are a Job's pods sorted by what they are.
type Counts struct {
	Active, Ready, Succeeded, Failed []*corev1.Pod
	// Restarts sums the container restarts of active pods (restartPolicy OnFailure
	// restarts in place; Kubernetes counts those against backoffLimit).
	Restarts int32
	// ConsecutiveFailures are the pods failed since the last success; LastFailure when the
	// latest of them finished.
	ConsecutiveFailures int
	LastFailure         time.Time
}

// Count sorts pods.
func Count(pods []*corev1.Pod) Counts {
	var c Counts
	var lastSuccess time.Time
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			c.Succeeded = append(c.Succeeded, p)
			if t := finishedAt(p); t.After(lastSuccess) {
				lastSuccess = t
			}
		case p.Status.Phase == corev1.PodFailed:
			c.Failed = append(c.Failed, p)
		case active(p):
			c.Active = append(c.Active, p)
			if podstatus.Ready(p) {
				c.Ready = append(c.Ready, p)
			}
			if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
				for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
					c.Restarts += s.RestartCount
				}
			}
		}
	}
	for _, p := range c.Failed {
		t := finishedAt(p)
		if t.Before(lastSuccess) {
			continue
		}
		c.ConsecutiveFailures++
		if t.After(c.LastFailure) {
			c.LastFailure = t
		}
	}
	return c
}

// Decide is the Job controller's decision as a pure function of the Job, the pods it owns
// and the time.
func Decide(job *batchv1.Job, pods []*corev1.Pod, now time.Time) Plan {
	c := Count(pods)
	st := *job.Status.DeepCopy()
	plan := Plan{}
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	completions := job.Spec.Completions
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	backoffLimit := int32(6)
	if job.Spec.BackoffLimit != nil {
		backoffLimit = *job.Spec.BackoffLimit
	}

	// Counts never go down: a finished pod someone deleted still counted.
	st.Succeeded = max(st.Succeeded, int32(len(c.Succeeded)))
	st.Failed = max(st.Failed, int32(len(c.Failed)))
	st.Active = int32(len(c.Active))
	readyN := int32(len(c.Ready))
	st.Ready = &readyN
	var succeededIdx []int
	if indexed {
		succeededIdx = mergeIndexes(parseIndexes(st.CompletedIndexes), c.Succeeded, *completions)
		st.CompletedIndexes = formatIndexes(succeededIdx)
		st.Succeeded = int32(len(succeededIdx))
	}
	if _, done := Finished(job); done {
		plan.Status = st
		return plan
	}
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if st.StartTime == nil && !suspended {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}

	finish := func(typ batchv1.JobConditionType, reason, message string) Plan {
		st.Conditions = setCondition(st.Conditions, typ, reason, message, now)
		if typ == batchv1.JobComplete {
			t := metav1.NewTime(now)
			st.CompletionTime = &t
		}
		st.Active = 0
		plan.Status = st
		plan.Delete = c.Active
		return plan
	}
	// Failure first, as Kubernetes checks it.
	if st.Failed > backoffLimit || (job.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && pastRestarts(c.Restarts, backoffLimit)) {
		return finish(batchv1.JobFailed, ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
	}
	if d := job.Spec.ActiveDeadlineSeconds; d != nil && st.StartTime != nil && !suspended {
		end := st.StartTime.Add(time.Duration(*d) * time.Second)
		if !now.Before(end) {
			return finish(batchv1.JobFailed, ReasonDeadlineExceeded, "Job was active longer than specified deadline")
		}
		plan.After = end.Sub(now)
	}
	switch {
	case indexed && int32(len(succeededIdx)) >= *completions,
		!indexed && completions != nil && st.Succeeded >= *completions,
		!indexed && completions == nil && st.Succeeded > 0 && len(c.Active) == 0:
		return finish(batchv1.JobComplete, ReasonCompletionsReached, "Reached expected number of succeeded pods")
	}
	if suspended {
		plan.Status = st
		plan.Delete = c.Active
		return plan
	}

	// How many pods should run.
	want := parallelism
	switch {
	case indexed:
		want = min(parallelism, *completions-int32(len(succeededIdx)))
	case completions != nil:
		want = min(parallelism, *completions-st.Succeeded)
	case st.Succeeded > 0:
		// A work queue Job: once one pod succeeded, no new ones start.
		want = min(want, int32(len(c.Active)))
	}
	want = max(want, 0)

	activePods := c.Active
	if indexed {
		// Duplicates of an index and indexes out of range go first.
		keep, extra := byIndex(activePods, *completions, succeededIdx)
		plan.Delete = append(plan.Delete, extra...)
		activePods = keep
	}
	if n := int32(len(activePods)); n > want {
		plan.Delete = append(plan.Delete, rankForDeletion(activePods)[:n-want]...)
	} else if n < want {
		if wait := c.LastFailure.Add(Backoff(c.ConsecutiveFailures)).Sub(now); c.ConsecutiveFailures > 0 && wait > 0 {
			plan.After = minPositive(plan.After, wait)
		} else {
			plan.Create = int(want - n)
			if indexed {
				plan.Indexes = missingIndexes(*completions, succeededIdx, activePods, plan.Create)
				plan.Create = len(plan.Indexes)
			}
		}
	}
	plan.Status = st
	return plan
}

func pastRestarts(restarts, limit int32) bool {
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	return min(a, b)
}

func setCondition(conds []batchv1.JobCondition, typ batchv1.JobConditionType, reason, message string, now time.Time) []batchv1.JobCondition {
	t := metav1.NewTime(now)
	for i := range conds {
		if conds[i].Type == typ {
			if conds[i].Status != corev1.ConditionTrue {
				conds[i].LastTransitionTime = t
			}
			conds[i].Status, conds[i].Reason, conds[i].Message, conds[i].LastProbeTime = corev1.ConditionTrue, reason, message, t
			return conds
		}
	}
	return append(conds, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: t, LastTransitionTime: t})
}

// rankForDeletion orders active pods the way Kubernetes picks which to delete first:
// unscheduled, then pending, then not ready, then the youngest.
func rankForDeletion(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	score := func(p *corev1.Pod) int {
		switch {
		case p.Spec.NodeName == "":
			return 0
		case p.Status.Phase == corev1.PodPending:
			return 1
		case !podstatus.Ready(p):
			return 2
		}
		return 3
	}
	sort.SliceStable(out, func(i, j int) bool {
		if si, sj := score(out[i]), score(out[j]); si != sj {
			return si < sj
		}
		return out[j].CreationTimestamp.Before(&out[i].CreationTimestamp)
	})
	return out
}

// byIndex keeps one active pod per index still to complete (the oldest) and returns the
// others: duplicates, indexes already succeeded, and pods without a valid index.
func byIndex(pods []*corev1.Pod, completions int32, succeeded []int) (keep, extra []*corev1.Pod) {
	seen := map[int]bool{}
	sorted := slices.Clone(pods)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp) })
	for _, p := range sorted {
		i := Index(p)
		if i < 0 || i >= int(completions) || seen[i] || slices.Contains(succeeded, i) {
			extra = append(extra, p)
			continue
		}
		seen[i] = true
		keep = append(keep, p)
	}
	return keep, extra
}

// missingIndexes are the lowest n indexes below completions that neither succeeded nor have
// an active pod.
func missingIndexes(completions int32, succeeded []int, active []*corev1.Pod, n int) []int {
	taken := map[int]bool{}
	for _, i := range succeeded {
		taken[i] = true
	}
	for _, p := range active {
		taken[Index(p)] = true
	}
	var out []int
	for i := 0; i < int(completions) && len(out) < n; i++ {
		if !taken[i] {
			out = append(out, i)
		}
	}
	return out
}

// mergeIndexes adds the indexes of succeeded pods (in range) to known, sorted and unique.
func mergeIndexes(known []int, succeeded []*corev1.Pod, completions int32) []int {
	out := slices.Clone(known)
	for _, p := range succeeded {
		if i := Index(p); i >= 0 && i < int(completions) {
			out = append(out, i)
		}
	}
	out = slices.DeleteFunc(out, func(i int) bool { return i < 0 || i >= int(completions) })
	slices.Sort(out)
	return slices.Compact(out)
}

// formatIndexes writes sorted indexes as Kubernetes' completedIndexes: ranges joined by
// commas, "1,3-5,7".
func formatIndexes(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(idx[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseIndexes reads completedIndexes; what does not parse is skipped.
func parseIndexes(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b && i-a < 1<<20; i++ {
			out = append(out, i)
		}
	}
	return out
}
