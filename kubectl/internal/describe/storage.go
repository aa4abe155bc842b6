package describe

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// accessModes abbreviates modes as kubectl does: RWO, ROX, RWX, RWOP in that order, each once.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return string(corev1.PersistentVolumeFilesystem)
	}
	return string(*m)
}

func (p *writer) claim(c *corev1.PersistentVolumeClaim) {
	p.line(0, "Name:\t%s", c.Name)
	p.line(0, "Namespace:\t%s", c.Namespace)
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	p.line(0, "StorageClass:\t%s", class)
	status := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		status = "Terminating"
	}
	p.line(0, "Status:\t%s", status)
	p.line(0, "Volume:\t%s", c.Spec.VolumeName)
	p.pairs(0, "Labels", c.Labels, "=")
	p.pairs(0, "Annotations", withoutLastApplied(c.Annotations), ": ")
	p.line(0, "Finalizers:\t%v", c.Finalizers)
	capacity, modes := "", ""
	if c.Spec.VolumeName != "" {
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModes(c.Status.AccessModes)
	}
	p.line(0, "Capacity:\t%s", capacity)
	p.line(0, "Access Modes:\t%s", modes)
	p.line(0, "VolumeMode:\t%s", volumeMode(c.Spec.VolumeMode))
}

func (p *writer) volume(v *corev1.PersistentVolume) {
	p.meta(v.ObjectMeta, false)
	p.line(0, "Finalizers:\t%v", v.Finalizers)
	p.line(0, "StorageClass:\t%s", v.Spec.StorageClassName)
	status := string(v.Status.Phase)
	if v.DeletionTimestamp != nil {
		status = "Terminating"
	}
	p.line(0, "Status:\t%s", status)
	claim := ""
	if r := v.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	p.line(0, "Claim:\t%s", claim)
	p.line(0, "Reclaim Policy:\t%s", v.Spec.PersistentVolumeReclaimPolicy)
	p.line(0, "Access Modes:\t%s", accessModes(v.Spec.AccessModes))
	p.line(0, "VolumeMode:\t%s", volumeMode(v.Spec.VolumeMode))
	q := v.Spec.Capacity[corev1.ResourceStorage]
	p.line(0, "Capacity:\t%s", q.String())
	p.line(0, "Message:\t%s", v.Status.Message)
	p.line(0, "Source:")
	switch {
	case v.Spec.HostPath != nil:
		typ := ""
		if v.Spec.HostPath.Type != nil {
			typ = string(*v.Spec.HostPath.Type)
		}
		p.line(1, "Type:\tHostPath (bare host directory volume)")
		p.line(1, "Path:\t%s", v.Spec.HostPath.Path)
		p.line(1, "HostPathType:\t%s", typ)
	case v.Spec.Local != nil:
		p.line(1, "Type:\tLocalVolume (a persistent volume backed by local storage on a node)")
		p.line(1, "Path:\t%s", v.Spec.Local.Path)
	case v.Spec.NFS != nil:
		p.line(1, "Type:\tNFS (an NFS mount that lasts the lifetime of a pod)")
		p.line(1, "Server:\t%s", v.Spec.NFS.Server)
		p.line(1, "Path:\t%s", v.Spec.NFS.Path)
		p.line(1, "ReadOnly:\t%t", v.Spec.NFS.ReadOnly)
	default:
		p.line(1, "Type:\tnot described here (kubectl get pv %s -o yaml shows it)", v.Name)
	}
}
