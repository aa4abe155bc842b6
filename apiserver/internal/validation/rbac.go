package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Role and binding names only need to be usable in a URL path, as in Kubernetes, whose
// bootstrap roles are named "system:node" and the like.

// Role is how Roles are validated.
var Role = Rules[*rbacv1.Role]{Name: pathSegment, Spec: func(r *rbacv1.Role) field.ErrorList {
	return policyRules(r.Rules, true)
}}

// ClusterRole is how ClusterRoles are validated.
var ClusterRole = Rules[*rbacv1.ClusterRole]{Name: pathSegment, Spec: validateClusterRole}

// RoleBinding is how RoleBindings are validated. The role a binding names is what it grants,
// so it may not change: a different grant is a different binding.
var RoleBinding = Rules[*rbacv1.RoleBinding]{
	Name: pathSegment,
	Spec: func(rb *rbacv1.RoleBinding) field.ErrorList {
		return binding(rb.RoleRef, rb.Subjects, true)
	},
	Update: func(n, o *rbacv1.RoleBinding) field.ErrorList { return roleRefUpdate(n.RoleRef, o.RoleRef) },
}

// ClusterRoleBinding is how ClusterRoleBindings are validated.
var ClusterRoleBinding = Rules[*rbacv1.ClusterRoleBinding]{
	Name: pathSegment,
	Spec: func(crb *rbacv1.ClusterRoleBinding) field.ErrorList {
		return binding(crb.RoleRef, crb.Subjects, false)
	},
	Update: func(n, o *rbacv1.ClusterRoleBinding) field.ErrorList { return roleRefUpdate(n.RoleRef, o.RoleRef) },
}

func validateClusterRole(cr *rbacv1.ClusterRole) field.ErrorList {
	allErrs := policyRules(cr.Rules, false)
	if cr.AggregationRule == nil {
		return allErrs
	}
	sp := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(cr.AggregationRule.ClusterRoleSelectors) == 0 {
		allErrs = append(allErrs, field.Required(sp, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range cr.AggregationRule.ClusterRoleSelectors {
		sel := &cr.AggregationRule.ClusterRoleSelectors[i]
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, sp.Index(i))...)
		// Kubernetes also reports, on the selector itself, one that does not convert.
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			allErrs = append(allErrs, field.Invalid(sp.Index(i), sel, "invalid label selector."))
		}
	}
	return allErrs
}

// policyRules checks each rule of a Role (namespaced) or ClusterRole.
func policyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	for i, r := range rules {
		allErrs = append(allErrs, policyRule(r, namespaced, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

// policyRule: a rule grants verbs either on non-resource URLs (only cluster-wide, since URLs
// have no namespace) or on resources of API groups, never both.
func policyRule(r rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(r.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		up := fldPath.Child("nonResourceURLs")
		if namespaced {
			allErrs = append(allErrs, field.Invalid(up, r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(up, r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(r.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

var (
	roleRefKinds        = []string{"Role", "ClusterRole"}
	clusterRoleRefKinds = []string{"ClusterRole"}
	subjectKinds        = []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}
)

// binding checks a RoleBinding (namespaced) or ClusterRoleBinding: what it names and who it
// grants it to. A ClusterRoleBinding cannot name a Role, which lives in a namespace it has not.
func binding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := clusterRoleRefKinds
	if namespaced {
		kinds = roleRefKinds
	}
	if !contains(kinds, ref.Kind) {
		allErrs = append(allErrs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(rp.Child("name"), ""))
	} else {
		allErrs = append(allErrs, nameErrs(rp.Child("name"), ref.Name, func(s string) []string { return pathSegment(s, false) })...)
	}
	for i, s := range subjects {
		allErrs = append(allErrs, subject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// subject: a ServiceAccount is a core kind, named like any object and found in a namespace
// (a RoleBinding's own, when it says none); Users and Groups are names RBAC's group defines.
func subject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			allErrs = append(allErrs, nameErrs(fldPath.Child("name"), s.Name, func(n string) []string { return dnsSubdomain(n, false) })...)
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, subjectKinds))
	}
	return allErrs
}

func roleRefUpdate(n, o rbacv1.RoleRef) field.ErrorList {
	if n != o {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), n, "cannot change roleRef")}
	}
	return nil
}
