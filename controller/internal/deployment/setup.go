package deployment

import (
	appsv1 "k8s.io/api/apps/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		DeploymentInformer: c.Informers.For(informer.Deployments, nil),
		ReplicaSetInformer: c.Informers.For(informer.ReplicaSets, nil),
		PodInformer:        c.Informers.Pods(),
		Deployments:        client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.Client),
		ReplicaSets:        client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.Client),
		Recorder:           c.Recorder,
		Options:            reconcile.Options{Workers: c.Config.DeploymentWorkers, Logger: c.Logger},
	})
}
