package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Priorities as Kubernetes bounds them: users may define up to HighestUserDefinablePriority;
// above it are only the system classes.
const (
	HighestUserDefinablePriority = int32(1000000000)
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
	SystemClusterCritical        = "system-cluster-critical"
	SystemNodeCritical           = "system-node-critical"
	systemPriorityClassPrefix    = "system-"
)

// SystemPriorityClasses are the classes every cluster has, with their values.
var SystemPriorityClasses = map[string]int32{
	SystemClusterCritical: SystemCriticalPriority,
	SystemNodeCritical:    SystemCriticalPriority + 1000,
}

// PriorityClass is how PriorityClasses are validated, as upstream: names starting with
// "system-" and values above 1e9 are the system classes' alone, and the value and preemption
// policy never change.
var PriorityClass = Rules[*schedulingv1.PriorityClass]{Spec: validatePriorityClass, Update: validatePriorityClassUpdate}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var allErrs field.ErrorList
	if value, system := SystemPriorityClasses[pc.Name]; system {
		if pc.Value != value {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"), fmt.Sprintf("%v is a system priority class, its value must be %d", pc.Name, value)))
		}
	} else {
		if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only"))
		}
		if pc.Value > HighestUserDefinablePriority {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
		}
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return allErrs
}

func validatePriorityClassUpdate(newObj, oldObj *schedulingv1.PriorityClass) field.ErrorList {
	var allErrs field.ErrorList
	if newObj.Value != oldObj.Value {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	if !samePolicy(newObj.PreemptionPolicy, oldObj.PreemptionPolicy) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("preemptionPolicy"), newObj.PreemptionPolicy, "field is immutable"))
	}
	return allErrs
}

func samePolicy(a, b *corev1.PreemptionPolicy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
