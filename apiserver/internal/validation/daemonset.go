package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DaemonSet is how DaemonSets are validated, as apps/v1 validates them.
var DaemonSet = Rules[*appsv1.DaemonSet]{Name: dnsSubdomain, Spec: validateDaemonSet, Update: validateDaemonSetUpdate}

var daemonSetStrategies = []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &ds.Spec
	selPath := sp.Child("selector")
	var allErrs field.ErrorList
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, selectorOpts, selPath)...)
		if s, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !s.Matches(labels.Set(spec.Template.Labels)) {
			allErrs = append(allErrs, field.Invalid(sp.Child("template", "metadata", "labels"), spec.Template.Labels, selectorMismatch))
		}
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for daemonset"))
		}
	}
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, sp.Child("template"), alwaysRestart)...)
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(sp.Child("template", "spec", "activeDeadlineSeconds"), spec.Template.Spec.ActiveDeadlineSeconds, "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateDaemonSetStrategy(&spec.UpdateStrategy, sp.Child("updateStrategy"))...)
	allErrs = append(allErrs, nonNegative(sp.Child("revisionHistoryLimit"), spec.RevisionHistoryLimit)...)
	return allErrs
}

func validateDaemonSetStrategy(st *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(st.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fldPath, st, daemonSetStrategies)}
	}
}

// validateRollingUpdateDaemonSet wants exactly one of maxUnavailable and maxSurge non-zero:
// a DaemonSet either takes a node's old pod down first or starts the new one beside it.
func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	up, sp := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	allErrs := intOrPercent(ru.MaxUnavailable, up)
	allErrs = append(allErrs, intOrPercent(ru.MaxSurge, sp)...)
	allErrs = append(allErrs, notOver100Percent(ru.MaxUnavailable, up)...)
	allErrs = append(allErrs, notOver100Percent(ru.MaxSurge, sp)...)
	hasUnavailable, hasSurge := !isZero(ru.MaxUnavailable), !isZero(ru.MaxSurge)
	switch {
	case hasUnavailable && hasSurge:
		allErrs = append(allErrs, field.Invalid(sp, ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		allErrs = append(allErrs, field.Required(up, "cannot be 0 when maxSurge is 0"))
	}
	return allErrs
}

func notOver100Percent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil || v.Type != intstr.String || percent(*v) <= 100 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must not be greater than 100%")}
}

func validateDaemonSetUpdate(n, o *appsv1.DaemonSet) field.ErrorList {
	return apivalidation.ValidateImmutableField(n.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))
}
