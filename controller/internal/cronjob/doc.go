// Package cronjob runs batch/v1 CronJobs as Kubernetes' CronJob controller (v2) does: a Job
// for each schedule time, at most one catch-up run for missed ones within
// startingDeadlineSeconds, the concurrency policy, suspend, status.active,
// lastScheduleTime and lastSuccessfulTime, and the finished Jobs kept to the history limits.
package cronjob
