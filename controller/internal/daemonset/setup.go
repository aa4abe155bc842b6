package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
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
		DaemonSetInformer: c.Informers.For(informer.DaemonSets, nil),
		PodInformer:       c.Informers.Pods(),
		NodeInformer:      c.Informers.Nodes(),
		RevisionInformer:  c.Informers.For(informer.ControllerRevisions, nil),
		DaemonSets:        client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](c.Client),
		Pods:              client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Revisions:         client.MustFor[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](c.Client),
		Recorder:          c.Recorder,
		Options:           reconcile.Options{Logger: c.Logger},
	})
}
