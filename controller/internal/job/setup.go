package job

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

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
		PodInformer: c.Informers.For(informer.Pods, informer.Indexers{PodJobIndex: PodJobIndexFunc}),
		Jobs:        client.MustFor[*batchv1.Job, *batchv1.JobList](c.Client),
		Pods:        client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:    c.Recorder,
		Options:     reconcile.Options{Logger: c.Logger},
	})
}
