package ttlafterfinished

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
		JobInformer: c.Informers.For(informer.Jobs, nil),
		Jobs:        client.MustFor[*batchv1.Job, *batchv1.JobList](c.Client),
		Options:     reconcile.Options{Logger: c.Logger},
	})
}
