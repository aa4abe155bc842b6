package validation

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	// A class's volumes are deleted or kept; Recycle is for volumes an administrator made.
	classReclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	bindingModes         = []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
)

// StorageClass is how StorageClasses are validated.
var StorageClass = Rules[*storagev1.StorageClass]{Name: dnsSubdomain, Spec: validateStorageClass, Update: validateStorageClassUpdate}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	var allErrs field.ErrorList
	pp := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		allErrs = append(allErrs, field.Required(pp, ""))
	} else {
		allErrs = append(allErrs, nameErrs(pp, sc.Provisioner, validation.IsQualifiedName)...)
	}
	for _, k := range sortedKeys(sc.Parameters) {
		if k == "" {
			allErrs = append(allErrs, field.Invalid(field.NewPath("parameters"), k, "must not be empty"))
		}
	}
	if p := sc.ReclaimPolicy; p != nil && !contains(classReclaimPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, classReclaimPolicies))
	}
	if m := sc.VolumeBindingMode; m != nil && !contains(bindingModes, *m) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, bindingModes))
	}
	return allErrs
}

// validateStorageClassUpdate keeps what a class promised its volumes, as Kubernetes does.
func validateStorageClassUpdate(n, o *storagev1.StorageClass) field.ErrorList {
	var allErrs field.ErrorList
	if !equality.Semantic.DeepEqual(n.Parameters, o.Parameters) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if n.Provisioner != o.Provisioner {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(n.ReclaimPolicy, o.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(n.VolumeBindingMode, o.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}
