package disruption

import (
	policyv1 "k8s.io/api/policy/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		PDBInformer:                   c.Informers.For(Resource, nil),
		PodInformer:                   c.Informers.For(informer.Pods, nil),
		ReplicaSetInformer:            c.Informers.For(informer.ReplicaSets, nil),
		DeploymentInformer:            c.Informers.For(informer.Deployments, nil),
		StatefulSetInformer:           c.Informers.For(informer.StatefulSets, nil),
		ReplicationControllerInformer: c.Informers.For(informer.ReplicationControllers, nil),
		PDBs:                          client.MustFor[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](c.Client),
		Recorder:                      c.Recorder,
		Options:                       reconcile.Options{Logger: c.Logger},
	})
}
