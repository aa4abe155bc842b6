package statefulset

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
		SetInformer:      c.Informers.For("statefulsets", nil),
		PodInformer:      c.Informers.Pods(),
		RevisionInformer: c.Informers.For("controllerrevisions", nil),
		ClaimInformer:    c.Informers.For(informer.PersistentVolumeClaims, nil),
		Sets:             client.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](c.Client),
		Pods:             client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Revisions:        client.MustFor[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](c.Client),
		Claims:           client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.Client),
		Recorder:         c.Recorder,
		Options:          reconcile.Options{Logger: c.Logger},
	})
}
