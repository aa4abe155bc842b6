package defaults

import (
	batchv1 "k8s.io/api/batch/v1"
)

// CronJob defaults a CronJob as Kubernetes does: concurrent runs allowed, not suspended, the
// last three successful Jobs and the last failed one kept; its pod template as a Job's.
func CronJob(cj *batchv1.CronJob) {
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if cj.Spec.Suspend == nil {
		cj.Spec.Suspend = ptr(false)
	}
	if cj.Spec.SuccessfulJobsHistoryLimit == nil {
		cj.Spec.SuccessfulJobsHistoryLimit = ptr(int32(3))
	}
	if cj.Spec.FailedJobsHistoryLimit == nil {
		cj.Spec.FailedJobsHistoryLimit = ptr(int32(1))
	}
	podSpec(&cj.Spec.JobTemplate.Spec.Template.Spec, false)
}
