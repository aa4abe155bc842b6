package volume

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/client"
)

// API is the writes the controller makes, and the one read it must not take from its cache.
type API interface {
	CreateVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error)
	UpdateVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error)
	UpdateVolumeStatus(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error)
	// DeleteVolume deletes the volume with this uid.
	DeleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error
	// GetClaim reads a claim from the apiserver: a volume is released only when its claim is
	// gone there too, not merely missing from a cache that has not seen it yet.
	GetClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	UpdateClaim(ctx context.Context, c *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error)
	UpdateClaimStatus(ctx context.Context, c *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error)
	CreateClass(ctx context.Context, sc *storagev1.StorageClass) error
}

// Recorder reports events; shared/record's Recorder and Fake satisfy it.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

// ClientAPI is the controller's API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		pvs:     client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](c),
		pvcs:    client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c),
		classes: client.MustFor[*storagev1.StorageClass, *storagev1.StorageClassList](c),
	}
}

type clientAPI struct {
	pvs     *client.Typed[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	pvcs    *client.Typed[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	classes *client.Typed[*storagev1.StorageClass, *storagev1.StorageClassList]
}

func (a clientAPI) CreateVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	return a.pvs.Create(ctx, pv, metav1.CreateOptions{})
}

func (a clientAPI) UpdateVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	return a.pvs.Update(ctx, pv, metav1.UpdateOptions{})
}

func (a clientAPI) UpdateVolumeStatus(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	return a.pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
}

func (a clientAPI) DeleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	return a.pvs.Delete(ctx, "", pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
}

func (a clientAPI) GetClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return a.pvcs.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateClaim(ctx context.Context, c *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	return a.pvcs.Update(ctx, c, metav1.UpdateOptions{})
}

func (a clientAPI) UpdateClaimStatus(ctx context.Context, c *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	return a.pvcs.UpdateStatus(ctx, c, metav1.UpdateOptions{})
}

func (a clientAPI) CreateClass(ctx context.Context, sc *storagev1.StorageClass) error {
	_, err := a.classes.Create(ctx, sc, metav1.CreateOptions{})
	return err
}
