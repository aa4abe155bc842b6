// Package storageclass reads which StorageClass a claim asks for and a volume belongs to, as
// every component must read it alike: the older beta annotation wins over the spec's field.
package storageclass

import corev1 "k8s.io/api/core/v1"

// BetaAnnotation names a class where spec.storageClassName does not; it predates the field
// and still wins over it.
const BetaAnnotation = "volume.beta.kubernetes.io/storage-class"

// OfClaim is the class a claim asks for; no class at all is "".
func OfClaim(c *corev1.PersistentVolumeClaim) string {
	if v, ok := c.Annotations[BetaAnnotation]; ok {
		return v
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

// OfVolume is the class a volume belongs to, read the same way.
func OfVolume(v *corev1.PersistentVolume) string {
	if c, ok := v.Annotations[BetaAnnotation]; ok {
		return c
	}
	return v.Spec.StorageClassName
}
