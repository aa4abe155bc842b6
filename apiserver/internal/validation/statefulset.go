package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var claimRetentionPolicies = []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType}

// StatefulSet is how StatefulSets are validated, as apps/v1 validates them.
var StatefulSet = Rules[*appsv1.StatefulSet]{Name: dnsSubdomain, Spec: validateStatefulSet, Update: validateStatefulSetUpdate}

func validateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &s.Spec
	var allErrs field.ErrorList

	switch spec.PodManagementPolicy {
	case "":
		allErrs = append(allErrs, field.Required(sp.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		allErrs = append(allErrs, field.Invalid(sp.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}

	us := sp.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case "":
		allErrs = append(allErrs, field.Required(us, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			allErrs = append(allErrs, field.Invalid(us.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			allErrs = append(allErrs, nonNegative(us.Child("rollingUpdate", "partition"), ru.Partition)...)
			if ru.MaxUnavailable != nil {
				allErrs = append(allErrs, intOrPercent(ru.MaxUnavailable, us.Child("rollingUpdate", "maxUnavailable"))...)
				if isZero(ru.MaxUnavailable) {
					allErrs = append(allErrs, field.Invalid(us.Child("rollingUpdate", "maxUnavailable"), ru.MaxUnavailable, "must be greater than 0"))
				}
			}
		}
	default:
		allErrs = append(allErrs, field.Invalid(us, spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}

	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := sp.Child("persistentVolumeClaimRetentionPolicy")
		allErrs = append(allErrs, retentionPolicy(pp.Child("whenDeleted"), p.WhenDeleted)...)
		allErrs = append(allErrs, retentionPolicy(pp.Child("whenScaled"), p.WhenScaled)...)
	}
	allErrs = append(allErrs, nonNegative(sp.Child("replicas"), spec.Replicas)...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	allErrs = append(allErrs, nonNegative(sp.Child("revisionHistoryLimit"), spec.RevisionHistoryLimit)...)
	if spec.Ordinals != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), sp.Child("ordinals.start"))...)
	}
	if spec.ServiceName != "" {
		for _, msg := range apivalidation.NameIsDNS1035Label(spec.ServiceName, false) {
			allErrs = append(allErrs, field.Invalid(sp.Child("serviceName"), spec.ServiceName, msg))
		}
	}

	selPath := sp.Child("selector")
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, selectorOpts, selPath)...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for statefulset"))
		}
	}
	tp := sp.Child("template")
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		allErrs = append(allErrs, field.Invalid(selPath, spec.Selector, ""))
	} else if !sel.Empty() && !sel.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(tp.Child("metadata", "labels"), spec.Template.Labels, selectorMismatch))
	}
	allErrs = append(allErrs, validateStatefulSetTemplate(spec, tp)...)
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	return allErrs
}

func retentionPolicy(fldPath *field.Path, v appsv1.PersistentVolumeClaimRetentionPolicyType) field.ErrorList {
	if !contains(claimRetentionPolicies, v) {
		return field.ErrorList{field.NotSupported(fldPath, v, claimRetentionPolicies)}
	}
	return nil
}

// validateStatefulSetTemplate checks the pod template as its pods will be: each claim template
// is a volume of the pod, replacing a template volume of the same name, so containers may
// mount it.
func validateStatefulSetTemplate(spec *appsv1.StatefulSetSpec, tp *field.Path) field.ErrorList {
	t := &spec.Template
	if len(spec.VolumeClaimTemplates) > 0 {
		t = t.DeepCopy()
		for _, c := range spec.VolumeClaimTemplates {
			src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}
			replaced := false
			for i := range t.Spec.Volumes {
				if t.Spec.Volumes[i].Name == c.Name {
					t.Spec.Volumes[i].VolumeSource, replaced = src, true
				}
			}
			if !replaced {
				t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: src})
			}
		}
	}
	return validatePodTemplate(t, tp, alwaysRestart)
}

func validateStatefulSetUpdate(n, o *appsv1.StatefulSet) field.ErrorList {
	// Only these fields may change; everything else about a StatefulSet is fixed.
	merged := n.Spec.DeepCopy()
	merged.Replicas = o.Spec.Replicas
	merged.Template = o.Spec.Template
	merged.UpdateStrategy = o.Spec.UpdateStrategy
	merged.MinReadySeconds = o.Spec.MinReadySeconds
	merged.Ordinals = o.Spec.Ordinals
	merged.RevisionHistoryLimit = o.Spec.RevisionHistoryLimit
	merged.PersistentVolumeClaimRetentionPolicy = o.Spec.PersistentVolumeClaimRetentionPolicy
	if !equality.Semantic.DeepEqual(*merged, o.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}
