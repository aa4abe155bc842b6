package registry

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

const (
	// TokenMountPath is where a pod's containers find their ServiceAccount's token, CA and
	// namespace, as client libraries' in-cluster configuration expects.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenVolumePrefix begins the name of the projected volume that holds them.
	TokenVolumePrefix = "kube-api-access-"
	// RootCAConfigMap is the ConfigMap in every namespace that holds the cluster's CA.
	RootCAConfigMap = "kube-root-ca.crt"
	// tokenExpirationSeconds is the life of the token the volume asks for: Kubernetes asks for
	// an hour and seven seconds, so the kubelet's requests are told apart from others.
	tokenExpirationSeconds = 3607
)

// admitServiceAccount is Kubernetes' ServiceAccount admission on create: the pod's service
// account must exist (the default one is made on the spot if its namespace lacks it yet), its
// image pull secrets are lent to a pod with none, and unless automounting is switched off (on
// the pod, else on the account) every container mounts a projected volume with a token, the
// cluster's CA and the namespace.
func admitServiceAccount(ctx context.Context, r *Registry, pod *corev1.Pod) error {
	name := pod.Spec.ServiceAccountName
	sa, err := r.serviceAccount(ctx, pod.Namespace, name)
	if errors.Is(err, apierror.ErrNotFound) && name == DefaultServiceAccount {
		if err = r.ns.ensureServiceAccount(ctx, pod.Namespace); err == nil {
			sa, err = r.serviceAccount(ctx, pod.Namespace, name)
		}
	}
	if err != nil {
		if errors.Is(err, apierror.ErrNotFound) {
			return apierror.Forbidden("", "pods", pod.Name, fmt.Sprintf("error looking up service account %s/%s: serviceaccount %q not found", pod.Namespace, name, name))
		}
		return err
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, sa.ImagePullSecrets...)
	}
	if automount(pod, sa) {
		MountServiceAccountToken(pod, RandomSuffix())
	}
	return nil
}

func (r *Registry) serviceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	res, err := scheme.Lookup("serviceaccounts")
	if err != nil {
		return nil, err
	}
	obj, _, err := r.Read(ctx, Key{Resource: res, Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// MountServiceAccountToken adds the kube-api-access-<suffix> volume and mounts it read-only at
// TokenMountPath in every container and init container that mounts nothing there yet; a pod
// whose containers all do gets no volume.
func MountServiceAccountToken(pod *corev1.Pod, suffix string) {
	volume := TokenVolumePrefix + suffix
	mounted := false
	mount := func(cs []corev1.Container) {
		for i := range cs {
			taken := false
			for _, m := range cs[i].VolumeMounts {
				if m.MountPath == TokenMountPath {
					taken = true
				}
			}
			if !taken {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: TokenMountPath})
				mounted = true
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
	if !mounted {
		return
	}
	expiration, mode := int64(tokenExpirationSeconds), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}},
	}})
}
