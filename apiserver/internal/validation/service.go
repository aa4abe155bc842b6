package validation

import (
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	serviceTypes      = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName}
	sessionAffinities = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	externalPolicies  = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	internalPolicies  = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
)

// The node port range the apiserver allocates from, as Kubernetes' default.
const (
	nodePortMin = 30000
	nodePortMax = 32767
)

const ipMessage = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"

// Service is how Services are validated; their names are DNS-1035 labels, as in Kubernetes.
var Service = Rules[*corev1.Service]{Name: dns1035Label, Spec: validateService, Update: validateServiceUpdate}

func validateService(s *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	sp := field.NewPath("spec")
	spec := &s.Spec
	if !contains(serviceTypes, spec.Type) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("type"), spec.Type, serviceTypes))
	}
	headless := spec.ClusterIP == corev1.ClusterIPNone
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(sp.Child("ports"), ""))
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		if spec.ClusterIP != "" {
			allErrs = append(allErrs, field.Forbidden(sp.Child("clusterIP"), "may not be set for ExternalName services"))
		}
		if spec.ExternalName == "" {
			allErrs = append(allErrs, field.Required(sp.Child("externalName"), ""))
		} else {
			allErrs = append(allErrs, nameErrs(sp.Child("externalName"), spec.ExternalName, validation.IsDNS1123Subdomain)...)
		}
	} else {
		allErrs = append(allErrs, validateClusterIPs(spec, sp)...)
	}

	seen := sets.New[string]()
	names := sets.New[string]()
	for i, p := range spec.Ports {
		idx := sp.Child("ports").Index(i)
		switch {
		case p.Name == "" && len(spec.Ports) > 1:
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		case p.Name != "" && names.Has(p.Name):
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), p.Name))
		case p.Name != "":
			allErrs = append(allErrs, nameErrs(idx.Child("name"), p.Name, validation.IsDNS1123Label)...)
		}
		names.Insert(p.Name)
		allErrs = append(allErrs, portNum(idx.Child("port"), p.Port)...)
		allErrs = append(allErrs, enum(idx.Child("protocol"), p.Protocol, portProtocols)...)
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if seen.Has(key) {
			allErrs = append(allErrs, field.Duplicate(idx, key))
		}
		seen.Insert(key)
		allErrs = append(allErrs, portNumOrName(idx.Child("targetPort"), p.TargetPort)...)
		if p.NodePort != 0 {
			switch {
			case spec.Type == corev1.ServiceTypeClusterIP:
				allErrs = append(allErrs, field.Forbidden(idx.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			case spec.Type == corev1.ServiceTypeExternalName:
				allErrs = append(allErrs, field.Forbidden(idx.Child("nodePort"), "may not be used when `type` is 'ExternalName'"))
			case p.NodePort < nodePortMin || p.NodePort > nodePortMax:
				allErrs = append(allErrs, field.Invalid(idx.Child("nodePort"), p.NodePort,
					fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", nodePortMin, nodePortMax)))
			}
		}
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, sp.Child("selector"))...)
	if spec.SessionAffinity != "" && !contains(sessionAffinities, spec.SessionAffinity) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities))
	}
	if spec.ExternalTrafficPolicy != "" {
		if spec.Type != corev1.ServiceTypeNodePort && spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Invalid(sp.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
		} else if !contains(externalPolicies, spec.ExternalTrafficPolicy) {
			allErrs = append(allErrs, field.NotSupported(sp.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, externalPolicies))
		}
	}
	if p := spec.InternalTrafficPolicy; p != nil && !contains(internalPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("internalTrafficPolicy"), *p, internalPolicies))
	}
	for i, ip := range spec.ExternalIPs {
		if net.ParseIP(ip) == nil {
			allErrs = append(allErrs, field.Invalid(sp.Child("externalIPs").Index(i), ip, ipMessage))
		}
	}
	return allErrs
}

func validateClusterIPs(spec *corev1.ServiceSpec, sp *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ip := spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone && net.ParseIP(ip) == nil {
		allErrs = append(allErrs, field.Invalid(sp.Child("clusterIP"), ip, ipMessage))
	}
	if len(spec.ClusterIPs) > 0 && spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP {
		allErrs = append(allErrs, field.Invalid(sp.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "must match `clusterIP` when specified"))
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.Invalid(sp.Child("clusterIPs"), spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			if i > 0 || len(spec.ClusterIPs) > 1 {
				allErrs = append(allErrs, field.Invalid(sp.Child("clusterIPs").Index(i), ip, "'None' must be the first and only value"))
			}
			continue
		}
		if net.ParseIP(ip) == nil {
			allErrs = append(allErrs, field.Invalid(sp.Child("clusterIPs").Index(i), ip, ipMessage))
		}
	}
	return allErrs
}

func validateServiceUpdate(newSvc, oldSvc *corev1.Service) field.ErrorList {
	// The cluster IP is an allocation: once made, it stays until the service is deleted
	// (moving to or from ExternalName releases or allocates it).
	if oldSvc.Spec.Type == corev1.ServiceTypeExternalName || newSvc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.ClusterIP == "" {
		return nil
	}
	return apivalidation.ValidateImmutableField(newSvc.Spec.ClusterIP, oldSvc.Spec.ClusterIP, field.NewPath("spec", "clusterIP"))
}

// Endpoints is how Endpoints are validated.
var Endpoints = Rules[*corev1.Endpoints]{Name: dnsSubdomain, Spec: validateEndpoints}

func validateEndpoints(e *corev1.Endpoints) field.ErrorList {
	var allErrs field.ErrorList
	for i, ss := range e.Subsets {
		idx := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(a, idx.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(a, idx.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, p := range ss.Ports {
			pp := idx.Child("ports").Index(j)
			if p.Name == "" && len(ss.Ports) > 1 {
				allErrs = append(allErrs, field.Required(pp.Child("name"), ""))
			} else if p.Name != "" {
				allErrs = append(allErrs, nameErrs(pp.Child("name"), p.Name, validation.IsDNS1123Label)...)
				if names.Has(p.Name) {
					allErrs = append(allErrs, field.Duplicate(pp.Child("name"), p.Name))
				}
				names.Insert(p.Name)
			}
			allErrs = append(allErrs, portNum(pp.Child("port"), p.Port)...)
			allErrs = append(allErrs, enum(pp.Child("protocol"), p.Protocol, portProtocols)...)
		}
	}
	return allErrs
}

func validateEndpointAddress(a corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if net.ParseIP(a.IP) == nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("ip"), a.IP, ipMessage))
	}
	if a.Hostname != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("hostname"), a.Hostname, validation.IsDNS1123Label)...)
	}
	if a.NodeName != nil && *a.NodeName != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("nodeName"), *a.NodeName, validation.IsDNS1123Subdomain)...)
	}
	return allErrs
}

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}

// maxSliceEndpoints and maxSlicePorts bound an EndpointSlice, as in Kubernetes.
const (
	maxSliceEndpoints = 1000
	maxSlicePorts     = 100
)

// EndpointSlice is how EndpointSlices are validated.
var EndpointSlice = Rules[*discoveryv1.EndpointSlice]{Name: dnsSubdomain, Spec: validateEndpointSlice}

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := enum(field.NewPath("addressType"), es.AddressType, addressTypes)
	ep := field.NewPath("endpoints")
	if len(es.Endpoints) > maxSliceEndpoints {
		allErrs = append(allErrs, field.TooMany(ep, len(es.Endpoints), maxSliceEndpoints))
	}
	for i, e := range es.Endpoints {
		idx := ep.Index(i)
		if len(e.Addresses) == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("addresses"), "must contain at least 1 address"))
		}
		for j, a := range e.Addresses {
			ap := idx.Child("addresses").Index(j)
			switch ip := net.ParseIP(a); es.AddressType {
			case discoveryv1.AddressTypeIPv4:
				if ip == nil || ip.To4() == nil {
					allErrs = append(allErrs, field.Invalid(ap, a, "must be a valid IPv4 address"))
				}
			case discoveryv1.AddressTypeIPv6:
				if ip == nil || ip.To4() != nil {
					allErrs = append(allErrs, field.Invalid(ap, a, "must be a valid IPv6 address"))
				}
			case discoveryv1.AddressTypeFQDN:
				allErrs = append(allErrs, validation.IsFullyQualifiedDomainName(ap, a)...)
			}
		}
		if e.Hostname != nil {
			allErrs = append(allErrs, nameErrs(idx.Child("hostname"), *e.Hostname, validation.IsDNS1123Label)...)
		}
		if e.NodeName != nil && *e.NodeName != "" {
			allErrs = append(allErrs, nameErrs(idx.Child("nodeName"), *e.NodeName, validation.IsDNS1123Subdomain)...)
		}
	}
	pp := field.NewPath("ports")
	if len(es.Ports) > maxSlicePorts {
		allErrs = append(allErrs, field.TooMany(pp, len(es.Ports), maxSlicePorts))
	}
	names := sets.New[string]()
	for i, p := range es.Ports {
		idx := pp.Index(i)
		if p.Name != nil && *p.Name != "" {
			allErrs = append(allErrs, nameErrs(idx.Child("name"), *p.Name, validation.IsDNS1123Label)...)
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if names.Has(name) {
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), name))
		}
		names.Insert(name)
		if p.Port != nil {
			allErrs = append(allErrs, portNum(idx.Child("port"), *p.Port)...)
		}
		if p.Protocol != nil {
			allErrs = append(allErrs, enum(idx.Child("protocol"), *p.Protocol, portProtocols)...)
		}
	}
	return allErrs
}
