package validation

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// IngressClass is how IngressClasses are validated, as Kubernetes' ValidateIngressClass: the
// controller a domain-prefixed path of at most 250 characters that never changes, and the
// parameters a reference with a scope.
var IngressClass = Rules[*networkingv1.IngressClass]{Name: dnsSubdomain, Spec: validateIngressClass, Update: validateIngressClassUpdate}

const maxIngressClassControllerLen = 250

var ingressClassScopes = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	sp := field.NewPath("spec")
	var allErrs field.ErrorList
	if len(ic.Spec.Controller) > maxIngressClassControllerLen {
		allErrs = append(allErrs, field.TooLong(sp.Child("controller"), ic.Spec.Controller, maxIngressClassControllerLen))
	}
	allErrs = append(allErrs, validation.IsDomainPrefixedPath(sp.Child("controller"), ic.Spec.Controller)...)
	return append(allErrs, validateIngressClassParameters(ic.Spec.Parameters, sp.Child("parameters"))...)
}

func validateIngressClassUpdate(n, o *networkingv1.IngressClass) field.ErrorList {
	return apivalidation.ValidateImmutableField(n.Spec.Controller, o.Spec.Controller, field.NewPath("spec", "controller"))
}

func validateIngressClassParameters(p *networkingv1.IngressClassParametersReference, fp *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var allErrs field.ErrorList
	if p.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*p.APIGroup) {
			allErrs = append(allErrs, field.Invalid(fp.Child("apiGroup"), *p.APIGroup, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"kind", p.Kind}, {"name", p.Name}} {
		if f.value == "" {
			allErrs = append(allErrs, field.Required(fp.Child(f.name), f.name+" is required"))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			allErrs = append(allErrs, field.Invalid(fp.Child(f.name), f.value, msg))
		}
	}
	if p.Scope == nil {
		return append(allErrs, field.Required(fp.Child("scope"), ""))
	}
	switch *p.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if p.Namespace == nil {
			allErrs = append(allErrs, field.Required(fp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(*p.Namespace, false) {
				allErrs = append(allErrs, field.Invalid(fp.Child("namespace"), *p.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if p.Namespace != nil {
			allErrs = append(allErrs, field.Forbidden(fp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fp.Child("scope"), *p.Scope, ingressClassScopes))
	}
	return allErrs
}
