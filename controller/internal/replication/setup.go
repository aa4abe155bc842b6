package replication

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Name is the controller's name, as --controllers takes it (Kubernetes').
const Name = "replicationcontroller"

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(replicaset.Config[*corev1.ReplicationController]{
		OwnerInformer: c.Informers.For(informer.ReplicationControllers, nil),
		PodInformer:   c.Informers.Pods(),
		Owners:        client.MustFor[*corev1.ReplicationController, *corev1.ReplicationControllerList](c.Client),
		Pods:          client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:      c.Recorder,
		Options:       reconcile.Options{Workers: c.Config.ReplicationControllerWorkers, Logger: c.Logger},
	})
}

// New is the ReplicaSet controller over ReplicationControllers; cfg's Name and View are set
// here.
func New(cfg replicaset.Config[*corev1.ReplicationController]) *replicaset.Controller[*corev1.ReplicationController] {
	cfg.Name, cfg.View = Name, View
	return replicaset.New(cfg)
}
