package cronjob

import (
	batchv1 "k8s.io/api/batch/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		CronJobInformer: c.Informers.For(Resource, nil),
		JobInformer:     c.Informers.For(informer.Jobs, nil),
		CronJobs:        client.MustFor[*batchv1.CronJob, *batchv1.CronJobList](c.Client),
		Jobs:            client.MustFor[*batchv1.Job, *batchv1.JobList](c.Client),
		Recorder:        c.Recorder,
		Options:         reconcile.Options{Logger: c.Logger},
	})
}
