package validation

import (
	"encoding/json"
	"net"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataSize bounds a ConfigMap's or Secret's payload, as in Kubernetes (etcd's request limit
// is 1.5 MiB and the object needs room for its metadata).
const maxDataSize = 1 << 20

var (
	accessModes     = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}
	reclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	volumeModes     = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	pathTypes       = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}
)

// Namespace is how Namespaces are validated; their names are DNS labels, as in Kubernetes.
var Namespace = Rules[*corev1.Namespace]{Name: dnsLabel, Spec: validateNamespace}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var allErrs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		allErrs = append(allErrs, apivalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return allErrs
}

// Node is how Nodes are validated.
var Node = Rules[*corev1.Node]{Name: dnsSubdomain, Spec: validateNode, Update: validateNodeUpdate}

func validateNode(n *corev1.Node) field.ErrorList {
	var allErrs field.ErrorList
	sp := field.NewPath("spec")
	if n.Spec.PodCIDR != "" {
		allErrs = append(allErrs, validation.IsValidCIDR(sp.Child("podCIDR"), n.Spec.PodCIDR)...)
	}
	for i, c := range n.Spec.PodCIDRs {
		allErrs = append(allErrs, validation.IsValidCIDR(sp.Child("podCIDRs").Index(i), c)...)
	}
	if len(n.Spec.PodCIDRs) > 0 && n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
		allErrs = append(allErrs, field.Invalid(sp.Child("podCIDRs").Index(0), n.Spec.PodCIDRs[0], "must match `podCIDR`"))
	}
	for i, t := range n.Spec.Taints {
		tp := sp.Child("taints").Index(i)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		if t.Value != "" {
			allErrs = append(allErrs, nameErrs(tp.Child("value"), t.Value, validation.IsValidLabelValue)...)
		}
		allErrs = append(allErrs, enum(tp.Child("effect"), t.Effect, taintEffects)...)
	}
	st := field.NewPath("status")
	for _, name := range sortedKeys(n.Status.Capacity) {
		allErrs = append(allErrs, validateQuantity(name, n.Status.Capacity[name], st.Child("capacity").Key(string(name)))...)
	}
	for _, name := range sortedKeys(n.Status.Allocatable) {
		allErrs = append(allErrs, validateQuantity(name, n.Status.Allocatable[name], st.Child("allocatable").Key(string(name)))...)
	}
	for i, a := range n.Status.Addresses {
		if a.Type == "" {
			allErrs = append(allErrs, field.Required(st.Child("addresses").Index(i).Child("type"), ""))
		}
	}
	return allErrs
}

func validateNodeUpdate(n, o *corev1.Node) field.ErrorList {
	// The pod CIDR is assigned once; the node's pods and routes depend on it.
	if o.Spec.PodCIDR != "" && n.Spec.PodCIDR != o.Spec.PodCIDR {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "podCIDR"), "node updates may not change podCIDR except from \"\" to valid")}
	}
	return nil
}

// ConfigMap is how ConfigMaps are validated.
var ConfigMap = Rules[*corev1.ConfigMap]{Name: dnsSubdomain, Spec: validateConfigMap, Update: validateConfigMapUpdate}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var allErrs field.ErrorList
	size := 0
	for _, k := range sortedKeys(cm.Data) {
		size += len(k) + len(cm.Data[k])
		allErrs = append(allErrs, nameErrs(field.NewPath("data").Key(k), k, validation.IsConfigMapKey)...)
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		size += len(k) + len(cm.BinaryData[k])
		allErrs = append(allErrs, nameErrs(field.NewPath("binaryData").Key(k), k, validation.IsConfigMapKey)...)
		if _, dup := cm.Data[k]; dup {
			allErrs = append(allErrs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
		}
	}
	if size > maxDataSize {
		allErrs = append(allErrs, field.TooLong(field.NewPath("data"), "", maxDataSize))
	}
	return allErrs
}

// ServiceAccount is how ServiceAccounts are validated.
var ServiceAccount = Rules[*corev1.ServiceAccount]{Name: dnsSubdomain, Spec: validateServiceAccount}

func validateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	var allErrs field.ErrorList
	for i, ref := range sa.Secrets {
		if ref.Name != "" {
			allErrs = append(allErrs, nameErrs(field.NewPath("secrets").Index(i).Child("name"), ref.Name, validation.IsDNS1123Subdomain)...)
		}
	}
	for i, ref := range sa.ImagePullSecrets {
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
			continue
		}
		allErrs = append(allErrs, nameErrs(field.NewPath("imagePullSecrets").Index(i).Child("name"), ref.Name, validation.IsDNS1123Subdomain)...)
	}
	return allErrs
}

func validateConfigMapUpdate(n, o *corev1.ConfigMap) field.ErrorList {
	return immutableData(o.Immutable, n.Immutable, equality.Semantic.DeepEqual(n.Data, o.Data) && equality.Semantic.DeepEqual(n.BinaryData, o.BinaryData))
}

// immutableData enforces `immutable: true` on ConfigMaps and Secrets: neither the data nor the
// flag itself may change afterwards.
func immutableData(oldFlag, newFlag *bool, sameData bool) field.ErrorList {
	if oldFlag == nil || !*oldFlag {
		return nil
	}
	var allErrs field.ErrorList
	if newFlag == nil || !*newFlag {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if !sameData {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	return allErrs
}

// Secret is how Secrets are validated.
var Secret = Rules[*corev1.Secret]{Name: dnsSubdomain, Spec: validateSecret, Update: validateSecretUpdate}

func validateSecret(s *corev1.Secret) field.ErrorList {
	var allErrs field.ErrorList
	dp := field.NewPath("data")
	size := 0
	for _, k := range sortedKeys(s.Data) {
		size += len(k) + len(s.Data[k])
		allErrs = append(allErrs, nameErrs(dp.Key(k), k, validation.IsConfigMapKey)...)
	}
	if size > maxDataSize {
		allErrs = append(allErrs, field.TooLong(dp, "", maxDataSize))
	}
	required := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				allErrs = append(allErrs, field.Required(dp.Key(k), ""))
			}
		}
	}
	switch s.Type {
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeDockerConfigJson:
		required(corev1.DockerConfigJsonKey)
		if b, ok := s.Data[corev1.DockerConfigJsonKey]; ok && !json.Valid(b) {
			allErrs = append(allErrs, field.Invalid(dp.Key(corev1.DockerConfigJsonKey), "<secret contents redacted>", "must be valid JSON"))
		}
	case corev1.SecretTypeDockercfg:
		required(corev1.DockerConfigKey)
	case corev1.SecretTypeSSHAuth:
		required(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			allErrs = append(allErrs, field.Required(dp.Key(corev1.BasicAuthUsernameKey), ""))
			allErrs = append(allErrs, field.Required(dp.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case "":
		allErrs = append(allErrs, field.Required(field.NewPath("type"), ""))
	default:
		allErrs = append(allErrs, nameErrs(field.NewPath("type"), string(s.Type), validation.IsQualifiedName)...)
	}
	return allErrs
}

func validateSecretUpdate(n, o *corev1.Secret) field.ErrorList {
	allErrs := apivalidation.ValidateImmutableField(n.Type, o.Type, field.NewPath("type"))
	return append(allErrs, immutableData(o.Immutable, n.Immutable, equality.Semantic.DeepEqual(n.Data, o.Data))...)
}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(fldPath, "at least 1 access mode is required")}
	}
	var allErrs field.ErrorList
	for _, m := range modes {
		if !contains(accessModes, m) {
			allErrs = append(allErrs, field.NotSupported(fldPath, m, accessModes))
		}
	}
	if contains(modes, corev1.ReadWriteOncePod) && len(modes) > 1 {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// PersistentVolume is how PersistentVolumes are validated.
var PersistentVolume = Rules[*corev1.PersistentVolume]{Name: dnsSubdomain, Spec: validatePersistentVolume, Update: validatePersistentVolumeUpdate}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &pv.Spec
	allErrs := validateAccessModes(spec.AccessModes, sp.Child("accessModes"))
	cp := sp.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(cp, ""))
	} else if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		allErrs = append(allErrs, field.NotSupported(cp, sortedKeys(spec.Capacity), []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, name := range sortedKeys(spec.Capacity) {
		allErrs = append(allErrs, validateQuantity(name, spec.Capacity[name], cp.Key(string(name)))...)
	}
	allErrs = append(allErrs, exactlyOneSource(&spec.PersistentVolumeSource, sp, "must specify a volume type", "may not specify more than 1 volume type")...)
	if hp := spec.HostPath; hp != nil && hp.Path == "" {
		allErrs = append(allErrs, field.Required(sp.Child("hostPath", "path"), ""))
	}
	if l := spec.Local; l != nil && l.Path == "" {
		allErrs = append(allErrs, field.Required(sp.Child("local", "path"), ""))
	}
	if ref := spec.ClaimRef; ref != nil {
		// The binder finds a pre-bound volume's claim by namespace and name.
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(sp.Child("claimRef", "name"), ""))
		}
		if ref.Namespace == "" {
			allErrs = append(allErrs, field.Required(sp.Child("claimRef", "namespace"), ""))
		}
	}
	if spec.PersistentVolumeReclaimPolicy != "" && !contains(reclaimPolicies, spec.PersistentVolumeReclaimPolicy) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("persistentVolumeReclaimPolicy"), spec.PersistentVolumeReclaimPolicy, reclaimPolicies))
	}
	if m := spec.VolumeMode; m != nil && !contains(volumeModes, *m) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("volumeMode"), *m, volumeModes))
	}
	if spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrs(sp.Child("storageClassName"), spec.StorageClassName, validation.IsDNS1123Subdomain)...)
	}
	return allErrs
}

func validatePersistentVolumeUpdate(n, o *corev1.PersistentVolume) field.ErrorList {
	sp := field.NewPath("spec")
	var allErrs field.ErrorList
	if !equality.Semantic.DeepEqual(n.Spec.PersistentVolumeSource, o.Spec.PersistentVolumeSource) {
		allErrs = append(allErrs, field.Forbidden(sp.Child("persistentvolumesource"), "spec.persistentvolumesource is forbidden once set"))
	}
	return append(allErrs, apivalidation.ValidateImmutableField(n.Spec.VolumeMode, o.Spec.VolumeMode, sp.Child("volumeMode"))...)
}

// PersistentVolumeClaim is how PersistentVolumeClaims are validated.
var PersistentVolumeClaim = Rules[*corev1.PersistentVolumeClaim]{Name: dnsSubdomain, Spec: validatePersistentVolumeClaim, Update: validatePersistentVolumeClaimUpdate}

func validatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &pvc.Spec
	allErrs := validateAccessModes(spec.AccessModes, sp.Child("accessModes"))
	storage := sp.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storage, ""))
	} else if q.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(storage, q.String(), "must be greater than zero"))
	}
	allErrs = append(allErrs, validateResources(&corev1.ResourceRequirements{Limits: spec.Resources.Limits, Requests: spec.Resources.Requests}, sp.Child("resources"))...)
	if m := spec.VolumeMode; m != nil && !contains(volumeModes, *m) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("volumeMode"), *m, volumeModes))
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, selectorOpts, sp.Child("selector"))...)
	}
	if c := spec.StorageClassName; c != nil && *c != "" {
		allErrs = append(allErrs, nameErrs(sp.Child("storageClassName"), *c, validation.IsDNS1123Subdomain)...)
	}
	if spec.VolumeName != "" {
		allErrs = append(allErrs, nameErrs(sp.Child("volumeName"), spec.VolumeName, validation.IsDNS1123Subdomain)...)
	}
	return allErrs
}

func validatePersistentVolumeClaimUpdate(n, o *corev1.PersistentVolumeClaim) field.ErrorList {
	// A claim may only ask for more storage; everything else about what it claims is fixed.
	merged := o.Spec.DeepCopy()
	merged.Resources.Requests = n.Spec.Resources.Requests
	merged.VolumeName = n.Spec.VolumeName // set by the binder
	merged.VolumeAttributesClassName = n.Spec.VolumeAttributesClassName
	if o.Spec.StorageClassName == nil && o.Spec.VolumeName == "" && n.Spec.StorageClassName != nil {
		// An unbound claim without a class gets the default one once there is one (the
		// binder's retroactive assignment, as in Kubernetes).
		merged.StorageClassName = n.Spec.StorageClassName
	}
	var allErrs field.ErrorList
	if !equality.Semantic.DeepEqual(merged, &n.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	if o.Spec.VolumeName != "" && n.Spec.VolumeName != o.Spec.VolumeName {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "volumeName"), "may not change once bound"))
	}
	nq, nok := n.Spec.Resources.Requests[corev1.ResourceStorage]
	oq, ook := o.Spec.Resources.Requests[corev1.ResourceStorage]
	if nok && ook && nq.Cmp(oq) < 0 {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return allErrs
}

// Ingress is how Ingresses are validated.
var Ingress = Rules[*networkingv1.Ingress]{Name: dnsSubdomain, Spec: validateIngress}

func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &ing.Spec
	var allErrs field.ErrorList
	if spec.DefaultBackend == nil && len(spec.Rules) == 0 {
		allErrs = append(allErrs, field.Invalid(sp, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		allErrs = append(allErrs, validateIngressBackend(spec.DefaultBackend, sp.Child("defaultBackend"))...)
	}
	if c := spec.IngressClassName; c != nil {
		allErrs = append(allErrs, nameErrs(sp.Child("ingressClassName"), *c, validation.IsDNS1123Subdomain)...)
	}
	for i, rule := range spec.Rules {
		rp := sp.Child("rules").Index(i)
		if rule.Host != "" {
			allErrs = append(allErrs, validateHost(rule.Host, rp.Child("host"))...)
		}
		if rule.HTTP == nil {
			continue
		}
		pp := rp.Child("http", "paths")
		if len(rule.HTTP.Paths) == 0 {
			allErrs = append(allErrs, field.Required(pp, ""))
		}
		for j := range rule.HTTP.Paths {
			allErrs = append(allErrs, validateIngressPath(&rule.HTTP.Paths[j], pp.Index(j))...)
		}
	}
	for i, tls := range spec.TLS {
		for j, h := range tls.Hosts {
			allErrs = append(allErrs, validateHost(h, sp.Child("tls").Index(i).Child("hosts").Index(j))...)
		}
	}
	return allErrs
}

func validateHost(host string, fldPath *field.Path) field.ErrorList {
	if net.ParseIP(host) != nil {
		return field.ErrorList{field.Invalid(fldPath, host, "must be a DNS name, not an IP address")}
	}
	if strings.Contains(host, "*") {
		return nameErrs(fldPath, host, validation.IsWildcardDNS1123Subdomain)
	}
	return nameErrs(fldPath, host, validation.IsDNS1123Subdomain)
}

func validateIngressPath(p *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p.PathType == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("pathType"), "pathType must be specified"))
	} else if !contains(pathTypes, *p.PathType) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("pathType"), *p.PathType, pathTypes))
	} else if *p.PathType != networkingv1.PathTypeImplementationSpecific || p.Path != "" {
		if !strings.HasPrefix(p.Path, "/") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), p.Path, "must be an absolute path"))
		}
	}
	return append(allErrs, validateIngressBackend(&p.Backend, fldPath.Child("backend"))...)
}

func validateIngressBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case b.Service != nil && b.Resource != nil:
		return field.ErrorList{field.Invalid(fldPath, "resource", "cannot set both resource and service backends")}
	case b.Resource != nil:
		if b.Resource.Kind == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("resource", "kind"), ""))
		}
		if b.Resource.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("resource", "name"), ""))
		}
		return allErrs
	case b.Service == nil:
		return field.ErrorList{field.Invalid(fldPath, "", "one backend must be specified")}
	}
	svc := fldPath.Child("service")
	if b.Service.Name == "" {
		allErrs = append(allErrs, field.Required(svc.Child("name"), ""))
	} else {
		allErrs = append(allErrs, nameErrs(svc.Child("name"), b.Service.Name, validation.IsDNS1035Label)...)
	}
	port := b.Service.Port
	switch {
	case port.Name != "" && port.Number != 0:
		allErrs = append(allErrs, field.Invalid(svc.Child("port"), port, "cannot set both port name & port number"))
	case port.Name != "":
		allErrs = append(allErrs, nameErrs(svc.Child("port", "name"), port.Name, validation.IsValidPortName)...)
	case port.Number != 0:
		allErrs = append(allErrs, portNum(svc.Child("port", "number"), port.Number)...)
	default:
		allErrs = append(allErrs, field.Required(svc.Child("port"), "port name or number is required"))
	}
	return allErrs
}

// Lease is how Leases are validated.
var Lease = Rules[*coordinationv1.Lease]{Name: dnsSubdomain, Spec: validateLease}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := positive(sp.Child("leaseDurationSeconds"), l.Spec.LeaseDurationSeconds)
	allErrs = append(allErrs, nonNegative(sp.Child("leaseTransitions"), l.Spec.LeaseTransitions)...)
	if s := l.Spec.Strategy; s != nil && *s == "" {
		allErrs = append(allErrs, field.Invalid(sp.Child("strategy"), *s, "must not be empty when set"))
	}
	return allErrs
}
