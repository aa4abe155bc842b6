package node

import (
	corev1 "k8s.io/api/core/v1"
)

// isMirrorPod reports whether a pod is a kubelet's mirror of a static pod; Kubernetes
// grants nothing through one, since a node can create it.
func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// containers visits every container of a pod: init, app and ephemeral.
func containers(spec *corev1.PodSpec, visit func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource)) {
	for _, c := range spec.InitContainers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range spec.Containers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range spec.EphemeralContainers {
		visit(c.Env, c.EnvFrom)
	}
}

// podSecretNames lists the Secrets a pod uses: image pull secrets, env and envFrom
// references, and volumes (secret, projected secret sources and the volume plugins that
// take a secret reference).
func podSecretNames(pod *corev1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	for _, ref := range pod.Spec.ImagePullSecrets {
		add(ref.Name)
	}
	containers(&pod.Spec, func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case v.Secret != nil:
			add(v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add(s.Secret.Name)
				}
			}
		case v.AzureFile != nil:
			add(v.AzureFile.SecretName)
		case v.CephFS != nil && v.CephFS.SecretRef != nil:
			add(v.CephFS.SecretRef.Name)
		case v.Cinder != nil && v.Cinder.SecretRef != nil:
			add(v.Cinder.SecretRef.Name)
		case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
			add(v.FlexVolume.SecretRef.Name)
		case v.RBD != nil && v.RBD.SecretRef != nil:
			add(v.RBD.SecretRef.Name)
		case v.ScaleIO != nil && v.ScaleIO.SecretRef != nil:
			add(v.ScaleIO.SecretRef.Name)
		case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
			add(v.ISCSI.SecretRef.Name)
		case v.StorageOS != nil && v.StorageOS.SecretRef != nil:
			add(v.StorageOS.SecretRef.Name)
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			add(v.CSI.NodePublishSecretRef.Name)
		}
	}
	return names
}

// podConfigMapNames lists the ConfigMaps a pod uses: env and envFrom references, configMap
// volumes and projected configMap sources.
func podConfigMapNames(pod *corev1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	containers(&pod.Spec, func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				add(e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case v.ConfigMap != nil:
			add(v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(s.ConfigMap.Name)
				}
			}
		}
	}
	return names
}

// podClaimNames lists the PersistentVolumeClaims a pod mounts, an ephemeral volume's claim
// being <pod>-<volume>.
func podClaimNames(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, pod.Name+"-"+v.Name)
		}
	}
	return names
}

type secretRef struct{ namespace, name string }

// pvSecretRefs lists the Secrets a kubelet needs to mount a PersistentVolume. A reference
// without a namespace is in the namespace of the claim the volume is bound to; secrets only
// a controller uses (CSI controller publish and expand) are not the node's to read.
func pvSecretRefs(pv *corev1.PersistentVolume) []secretRef {
	claimNS := ""
	if pv.Spec.ClaimRef != nil {
		claimNS = pv.Spec.ClaimRef.Namespace
	}
	var refs []secretRef
	withNS := func(ns, name string) {
		if ns == "" {
			ns = claimNS
		}
		if name != "" {
			refs = append(refs, secretRef{ns, name})
		}
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.AzureFile != nil:
		ns := ""
		if s.AzureFile.SecretNamespace != nil {
			ns = *s.AzureFile.SecretNamespace
		}
		withNS(ns, s.AzureFile.SecretName)
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		withNS(s.CephFS.SecretRef.Namespace, s.CephFS.SecretRef.Name)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		withNS(s.Cinder.SecretRef.Namespace, s.Cinder.SecretRef.Name)
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		withNS(s.FlexVolume.SecretRef.Namespace, s.FlexVolume.SecretRef.Name)
	case s.RBD != nil && s.RBD.SecretRef != nil:
		withNS(s.RBD.SecretRef.Namespace, s.RBD.SecretRef.Name)
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		withNS(s.ScaleIO.SecretRef.Namespace, s.ScaleIO.SecretRef.Name)
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		withNS(s.ISCSI.SecretRef.Namespace, s.ISCSI.SecretRef.Name)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		// StorageOS names its secret's namespace outright.
		if s.StorageOS.SecretRef.Name != "" {
			refs = append(refs, secretRef{s.StorageOS.SecretRef.Namespace, s.StorageOS.SecretRef.Name})
		}
	case s.CSI != nil:
		for _, ref := range []*corev1.SecretReference{s.CSI.NodeStageSecretRef, s.CSI.NodePublishSecretRef, s.CSI.NodeExpandSecretRef} {
			if ref != nil && ref.Name != "" {
				refs = append(refs, secretRef{ref.Namespace, ref.Name})
			}
		}
	}
	return refs
}
