package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Name is the controller's name, as --controllers takes it.
const Name = "replicaset"

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config[*appsv1.ReplicaSet]{
		Name:          Name,
		View:          ReplicaSets,
		OwnerInformer: c.Informers.For(informer.ReplicaSets, nil),
		PodInformer:   c.Informers.Pods(),
		Owners:        client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.Client),
		Pods:          client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:      c.Recorder,
		Options:       reconcile.Options{Workers: c.Config.ReplicaSetWorkers, Logger: c.Logger},
	})
}
