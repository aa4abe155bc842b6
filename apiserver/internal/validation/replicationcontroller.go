package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicationController is how ReplicationControllers are validated, as Kubernetes'
// ValidateReplicationController: a non-empty equality selector that selects the template's
// labels, pods that always restart and have no deadline.
var ReplicationController = Rules[*corev1.ReplicationController]{Name: dnsSubdomain, Spec: validateReplicationController}

func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &rc.Spec
	allErrs := apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), sp.Child("minReadySeconds"))
	if len(spec.Selector) == 0 {
		allErrs = append(allErrs, field.Required(sp.Child("selector"), ""))
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, sp.Child("selector"))...)
	allErrs = append(allErrs, nonNegative(sp.Child("replicas"), spec.Replicas)...)
	tp := sp.Child("template")
	t := spec.Template
	if t == nil {
		return append(allErrs, field.Required(tp, ""))
	}
	if sel := labels.Set(spec.Selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, selectorMismatch))
	}
	allErrs = append(allErrs, validatePodTemplate(t, tp, alwaysRestart)...)
	if t.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(tp.Child("spec", "activeDeadlineSeconds"), t.Spec.ActiveDeadlineSeconds, "must not be specified"))
	}
	return allErrs
}
