package volume

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		VolumeInformer: c.Informers.For(informer.PersistentVolumes, nil),
		ClaimInformer:  c.Informers.For(informer.PersistentVolumeClaims, nil),
		ClassInformer:  c.Informers.For(informer.StorageClasses, nil),
		Volumes:        client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](c.Client),
		Claims:         client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.Client),
		Classes:        client.MustFor[*storagev1.StorageClass, *storagev1.StorageClassList](c.Client),
		Recorder:       c.Recorder,
		Provisioner:    DefaultProvisioner,
		Root:           c.Config.PVRoot,
		DefaultClass:   c.Config.DefaultStorageClass,
		Options:        reconcile.Options{Logger: c.Logger},
	})
}
