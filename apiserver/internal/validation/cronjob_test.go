package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/apiserver/internal/defaults"
)

func newCronJob() *batchv1.CronJob {
	cj := &batchv1.CronJob{ObjectMeta: meta("hello"), Spec: batchv1.CronJobSpec{Schedule: "* * * * *"}}
	cj.Spec.JobTemplate.Spec.Template = template(nil)
	cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return cj
}

func TestCronJobCreate(t *testing.T) {
	runCreate(t, CronJob, defaults.CronJob, newCronJob, []createCase[*batchv1.CronJob]{
		{name: "valid"},
		{name: "descriptor", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@hourly" }},
		{name: "every", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@every 5m" }},
		{name: "time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Europe/Paris") }},
		{name: "schedule required", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, want: []problem{req("spec.schedule")}},
		{name: "schedule unparsable", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" }, want: []problem{inv("spec.schedule")}},
		{name: "six fields", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 * * * * *" }, want: []problem{inv("spec.schedule")}},
		{name: "TZ in schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC * * * * *" }, want: []problem{inv("spec.schedule")}},
		{name: "unknown time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Mars/Olympus") }, want: []problem{inv("spec.timeZone")}},
		{name: "path time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("../../etc/passwd") }, want: []problem{inv("spec.timeZone")}},
		{name: "local time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Local") }, want: []problem{inv("spec.timeZone")}},
		{name: "empty time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("") }, want: []problem{inv("spec.timeZone")}},
		{name: "concurrency policy", mutate: func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" }, want: []problem{nsup("spec.concurrencyPolicy")}},
		{name: "negative deadline", mutate: func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr(int64(-1)) }, want: []problem{inv("spec.startingDeadlineSeconds")}},
		{name: "negative history", mutate: func(cj *batchv1.CronJob) { cj.Spec.FailedJobsHistoryLimit = ptr(int32(-1)) }, want: []problem{inv("spec.failedJobsHistoryLimit")}},
		{name: "selector in template", mutate: func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, want: []problem{inv("spec.jobTemplate.spec.selector")}},
		{name: "restart always", mutate: func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
			want: []problem{nsup("spec.jobTemplate.spec.template.spec.restartPolicy")}},
		{name: "name too long for its Jobs", mutate: func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 53) }, want: []problem{inv("metadata.name")}},
	})
}

func newPDB() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: meta("web"), Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromInt32(2)),
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
}

func TestPodDisruptionBudgetCreate(t *testing.T) {
	runCreate(t, PodDisruptionBudget, nil, newPDB, []createCase[*policyv1.PodDisruptionBudget]{
		{name: "valid"},
		{name: "percent", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr(intstr.FromString("50%")) }},
		{name: "both", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr(intstr.FromInt32(1)) }, want: []problem{inv("spec")}},
		{name: "negative", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr(intstr.FromInt32(-1)) }, want: []problem{inv("spec.minAvailable")}},
		{name: "over 100%", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable = nil
			p.Spec.MaxUnavailable = ptr(intstr.FromString("150%"))
		}, want: []problem{inv("spec.maxUnavailable")}},
		{name: "bad selector", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}
		}, want: []problem{inv("spec.selector.matchExpressions[0].operator")}},
		{name: "eviction policy", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.UnhealthyPodEvictionPolicyType("Never"))
		}, want: []problem{nsup("spec.unhealthyPodEvictionPolicy")}},
	})
}
