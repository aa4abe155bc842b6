package validation

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NetworkPolicy is how NetworkPolicies are validated, as Kubernetes' ValidateNetworkPolicy.
var NetworkPolicy = Rules[*networkingv1.NetworkPolicy]{Name: dnsSubdomain, Spec: validateNetworkPolicy}

var (
	networkPolicyProtocols = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	policyTypes            = []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
)

func validateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &np.Spec
	allErrs := metav1validation.ValidateLabelSelector(&spec.PodSelector, selectorOpts, sp.Child("podSelector"))
	for i := range spec.Ingress {
		rp := sp.Child("ingress").Index(i)
		for j := range spec.Ingress[i].Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&spec.Ingress[i].Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range spec.Ingress[i].From {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&spec.Ingress[i].From[j], rp.Child("from").Index(j))...)
		}
	}
	for i := range spec.Egress {
		rp := sp.Child("egress").Index(i)
		for j := range spec.Egress[i].Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&spec.Egress[i].Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range spec.Egress[i].To {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&spec.Egress[i].To[j], rp.Child("to").Index(j))...)
		}
	}
	if len(spec.PolicyTypes) > len(policyTypes) {
		return append(allErrs, field.Invalid(sp.Child("policyTypes"), &spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range spec.PolicyTypes {
		if !contains(policyTypes, string(t)) {
			allErrs = append(allErrs, field.NotSupported(sp.Child("policyTypes").Index(i), t, policyTypes))
		}
	}
	return allErrs
}

func validateNetworkPolicyPort(p *networkingv1.NetworkPolicyPort, fp *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p.Protocol != nil && !contains(networkPolicyProtocols, string(*p.Protocol)) {
		allErrs = append(allErrs, field.NotSupported(fp.Child("protocol"), *p.Protocol, networkPolicyProtocols))
	}
	switch {
	case p.Port == nil:
		if p.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(fp.Child("endPort"), *p.EndPort, "may not be specified when `port` is not specified"))
		}
	case p.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(p.Port.IntVal)) {
			allErrs = append(allErrs, field.Invalid(fp.Child("port"), p.Port.IntVal, msg))
		}
		if p.EndPort != nil {
			if *p.EndPort < p.Port.IntVal {
				allErrs = append(allErrs, field.Invalid(fp.Child("endPort"), p.Port.IntVal, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*p.EndPort)) {
				allErrs = append(allErrs, field.Invalid(fp.Child("endPort"), *p.EndPort, msg))
			}
		}
	default:
		if p.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(fp.Child("endPort"), *p.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(p.Port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fp.Child("port"), p.Port.StrVal, msg))
		}
	}
	return allErrs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, fp *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.PodSelector, selectorOpts, fp.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, selectorOpts, fp.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		allErrs = append(allErrs, validateIPBlock(peer.IPBlock, fp.Child("ipBlock"))...)
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fp, "must specify a peer"))
	} else if n > 1 && peer.IPBlock != nil {
		allErrs = append(allErrs, field.Forbidden(fp, "may not specify both ipBlock and another peer"))
	}
	return allErrs
}

func validateIPBlock(b *networkingv1.IPBlock, fp *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(fp.Child("cidr"), "")}
	}
	allErrs := validation.IsValidCIDR(fp.Child("cidr"), b.CIDR)
	_, cidr, err := net.ParseCIDR(b.CIDR)
	if err != nil {
		return allErrs
	}
	for i, s := range b.Except {
		ep := fp.Child("except").Index(i)
		cidrErrs := validation.IsValidCIDR(ep, s)
		allErrs = append(allErrs, cidrErrs...)
		_, except, err := net.ParseCIDR(s)
		if len(cidrErrs) > 0 || err != nil {
			continue
		}
		cidrLen, _ := cidr.Mask.Size()
		exceptLen, _ := except.Mask.Size()
		if !cidr.Contains(except.IP) || cidrLen >= exceptLen {
			allErrs = append(allErrs, field.Invalid(ep, s, "must be a strict subset of `cidr`"))
		}
	}
	return allErrs
}
