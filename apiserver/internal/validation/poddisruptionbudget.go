package validation

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodDisruptionBudget is how PodDisruptionBudgets are validated, as Kubernetes does: at most
// one of minAvailable and maxUnavailable, each a count or a percentage of at most 100%.
var PodDisruptionBudget = Rules[*policyv1.PodDisruptionBudget]{Spec: validatePodDisruptionBudget}

var unhealthyPodEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

func validatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &pdb.Spec
	var allErrs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(sp, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	allErrs = append(allErrs, budgetValue(spec.MinAvailable, sp.Child("minAvailable"))...)
	allErrs = append(allErrs, budgetValue(spec.MaxUnavailable, sp.Child("maxUnavailable"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, selectorOpts, sp.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && !contains(unhealthyPodEvictionPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("unhealthyPodEvictionPolicy"), *p, unhealthyPodEvictionPolicies))
	}
	return allErrs
}

// budgetValue checks a count or percentage that may not exceed 100%.
func budgetValue(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	allErrs := intOrPercent(v, fldPath)
	if len(allErrs) == 0 && v != nil && v.Type == intstr.String && percent(*v) > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must not be greater than 100%"))
	}
	return allErrs
}
