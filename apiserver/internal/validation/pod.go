package validation

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	restartPolicies  = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	dnsPolicies      = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	pullPolicies     = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	portProtocols    = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	messagePolicies  = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	tolerationOps    = []corev1.TolerationOperator{corev1.TolerationOpExists, corev1.TolerationOpEqual}
	taintEffects     = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	uriSchemes       = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	maxDeadlineRange = validation.InclusiveRangeError(1, 2147483647)
)

// Pod is how Pods are validated.
var Pod = Rules[*corev1.Pod]{Name: dnsSubdomain, Spec: validatePod, Update: validatePodUpdate, Create: validatePodCreate}

// validatePodCreate refuses ephemeral containers on a new pod: they are added to a running
// one through pods/ephemeralcontainers.
func validatePodCreate(p *corev1.Pod) field.ErrorList {
	if len(p.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

func validatePod(p *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validatePodSpec(&p.Spec, specPath)
	if p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *p.Spec.ActiveDeadlineSeconds, maxDeadlineRange))
	}
	return allErrs
}

// validatePodTemplate checks a controller's pod template: its labels and a valid pod spec whose
// restartPolicy is one of allowed.
func validatePodTemplate(t *corev1.PodTemplateSpec, fldPath *field.Path, allowed []corev1.RestartPolicy) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(t.Labels, fldPath.Child("metadata", "labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("metadata", "annotations"))...)
	specPath := fldPath.Child("spec")
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	for _, e := range validatePodSpec(&t.Spec, specPath) {
		// The template's own rule below replaces the generic restartPolicy check.
		if e.Field != specPath.Child("restartPolicy").String() {
			allErrs = append(allErrs, e)
		}
	}
	rp := specPath.Child("restartPolicy")
	switch {
	case t.Spec.RestartPolicy == "":
		allErrs = append(allErrs, field.Required(rp, "valid values: "+quoteJoin(allowed)))
	case !contains(allowed, t.Spec.RestartPolicy):
		allErrs = append(allErrs, field.NotSupported(rp, t.Spec.RestartPolicy, allowed))
	}
	return allErrs
}

func validatePodSpec(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	volumes, errs := validateVolumes(s.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, errs...)

	names := sets.New[string]()
	if len(s.Containers) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("containers"), ""))
	}
	for i := range s.InitContainers {
		allErrs = append(allErrs, validateContainer(&s.InitContainers[i], fldPath.Child("initContainers").Index(i), names, volumes, true)...)
	}
	for i := range s.Containers {
		allErrs = append(allErrs, validateContainer(&s.Containers[i], fldPath.Child("containers").Index(i), names, volumes, false)...)
	}
	allErrs = append(allErrs, validateEphemeralContainers(s, volumes, fldPath.Child("ephemeralContainers"))...)
	allErrs = append(allErrs, enum(fldPath.Child("restartPolicy"), s.RestartPolicy, restartPolicies)...)
	allErrs = append(allErrs, enum(fldPath.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies)...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(s.NodeSelector, fldPath.Child("nodeSelector"))...)
	if s.ServiceAccountName != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("serviceAccountName"), s.ServiceAccountName, validation.IsDNS1123Subdomain)...)
	}
	if s.NodeName != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("nodeName"), s.NodeName, validation.IsDNS1123Subdomain)...)
	}
	if s.Hostname != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("hostname"), s.Hostname, validation.IsDNS1123Label)...)
	}
	if s.Subdomain != "" {
		allErrs = append(allErrs, nameErrs(fldPath.Child("subdomain"), s.Subdomain, validation.IsDNS1123Label)...)
	}
	if s.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*s.TerminationGracePeriodSeconds, fldPath.Child("terminationGracePeriodSeconds"))...)
	}
	for i, t := range s.Tolerations {
		allErrs = append(allErrs, validateToleration(t, fldPath.Child("tolerations").Index(i))...)
	}
	for i, ips := range s.ImagePullSecrets {
		if ips.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

func validateContainer(c *corev1.Container, fldPath *field.Path, names sets.Set[string], volumes sets.Set[string], init bool) field.ErrorList {
	var allErrs field.ErrorList
	namePath := fldPath.Child("name")
	switch {
	case c.Name == "":
		allErrs = append(allErrs, field.Required(namePath, ""))
	case names.Has(c.Name):
		allErrs = append(allErrs, field.Duplicate(namePath, c.Name))
	default:
		allErrs = append(allErrs, nameErrs(namePath, c.Name, validation.IsDNS1123Label)...)
	}
	names.Insert(c.Name)
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	allErrs = append(allErrs, enum(fldPath.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies)...)
	allErrs = append(allErrs, enum(fldPath.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, messagePolicies)...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	probes := []struct {
		name string
		p    *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}}
	for _, pr := range probes {
		if pr.p == nil {
			continue
		}
		pp := fldPath.Child(pr.name)
		if init && c.RestartPolicy == nil {
			allErrs = append(allErrs, field.Forbidden(pp, "may not be set for init containers without restartPolicy=Always"))
			continue
		}
		allErrs = append(allErrs, validateProbe(pr.p, pp)...)
		// Liveness and startup probes decide restarts; one success must be enough.
		if pr.name != "readinessProbe" && pr.p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(pp.Child("successThreshold"), pr.p.SuccessThreshold, "must be 1"))
		}
	}
	if lc := c.Lifecycle; lc != nil {
		for _, h := range []struct {
			name string
			h    *corev1.LifecycleHandler
		}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
			if h.h != nil {
				allErrs = append(allErrs, validateHandler(&corev1.ProbeHandler{Exec: h.h.Exec, HTTPGet: h.h.HTTPGet, TCPSocket: h.h.TCPSocket}, h.h.Sleep != nil, fldPath.Child("lifecycle", h.name))...)
			}
		}
	}
	return allErrs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		idx := fldPath.Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				allErrs = append(allErrs, field.Invalid(idx.Child("name"), p.Name, msg))
			}
			if names.Has(p.Name) {
				allErrs = append(allErrs, field.Duplicate(idx.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		if p.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("containerPort"), ""))
		} else {
			allErrs = append(allErrs, portNum(idx.Child("containerPort"), p.ContainerPort)...)
		}
		if p.HostPort != 0 {
			allErrs = append(allErrs, portNum(idx.Child("hostPort"), p.HostPort)...)
		}
		allErrs = append(allErrs, enum(idx.Child("protocol"), p.Protocol, portProtocols)...)
		if p.HostIP != "" {
			allErrs = append(allErrs, validation.IsValidIP(idx.Child("hostIP"), p.HostIP)...)
		}
	}
	return allErrs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		idx := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		} else {
			allErrs = append(allErrs, nameErrs(idx.Child("name"), ev.Name, validation.IsEnvVarName)...)
		}
		vf := ev.ValueFrom
		if vf == nil {
			continue
		}
		vfPath := idx.Child("valueFrom")
		n := 0
		if vf.FieldRef != nil {
			n++
			if vf.FieldRef.FieldPath == "" {
				allErrs = append(allErrs, field.Required(vfPath.Child("fieldRef", "fieldPath"), ""))
			}
		}
		if vf.ResourceFieldRef != nil {
			n++
			if vf.ResourceFieldRef.Resource == "" {
				allErrs = append(allErrs, field.Required(vfPath.Child("resourceFieldRef", "resource"), ""))
			}
		}
		if vf.ConfigMapKeyRef != nil {
			n++
			allErrs = append(allErrs, keySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, vfPath.Child("configMapKeyRef"))...)
		}
		if vf.SecretKeyRef != nil {
			n++
			allErrs = append(allErrs, keySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, vfPath.Child("secretKeyRef"))...)
		}
		switch {
		case n == 0:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
		case n > 1:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not have more than one field specified at a time"))
		case ev.Value != "":
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not be specified when `value` is not empty"))
		}
	}
	return allErrs
}

func keySelector(name, key string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		allErrs = append(allErrs, nameErrs(fldPath.Child("key"), key, validation.IsConfigMapKey)...)
	}
	return allErrs
}

func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	for _, name := range sortedKeys(r.Limits) {
		allErrs = append(allErrs, validateQuantity(name, r.Limits[name], limPath.Key(string(name)))...)
	}
	for _, name := range sortedKeys(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, validateQuantity(name, q, p)...)
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

func validateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), "must be greater than or equal to 0"))
	}
	return allErrs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		idx := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			allErrs = append(allErrs, field.NotFound(idx.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			allErrs = append(allErrs, field.Required(idx.Child("mountPath"), ""))
		case paths.Has(m.MountPath):
			allErrs = append(allErrs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if strings.Contains(m.SubPath, "..") || strings.HasPrefix(m.SubPath, "/") {
			allErrs = append(allErrs, field.Invalid(idx.Child("subPath"), m.SubPath, "must be a relative path without '..'"))
		}
	}
	return allErrs
}

// validateVolumes checks names and sources and returns the set of volume names for mounts.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		idx := fldPath.Index(i)
		switch {
		case v.Name == "":
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		case names.Has(v.Name):
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), v.Name))
		default:
			allErrs = append(allErrs, nameErrs(idx.Child("name"), v.Name, validation.IsDNS1123Label)...)
		}
		names.Insert(v.Name)
		allErrs = append(allErrs, exactlyOneSource(&v.VolumeSource, idx, "must specify a volume type", "may not specify more than 1 volume type")...)
		if hp := v.HostPath; hp != nil && hp.Path == "" {
			allErrs = append(allErrs, field.Required(idx.Child("hostPath", "path"), ""))
		}
		if s := v.Secret; s != nil && s.SecretName == "" {
			allErrs = append(allErrs, field.Required(idx.Child("secret", "secretName"), ""))
		}
		if c := v.ConfigMap; c != nil && c.Name == "" {
			allErrs = append(allErrs, field.Required(idx.Child("configMap", "name"), ""))
		}
		if c := v.PersistentVolumeClaim; c != nil && c.ClaimName == "" {
			allErrs = append(allErrs, field.Required(idx.Child("persistentVolumeClaim", "claimName"), ""))
		}
	}
	return names, allErrs
}

// exactlyOneSource counts the set pointer fields of a union struct such as VolumeSource and
// reports none or more than one, naming the extra field by its JSON name as Kubernetes does.
// Reflection keeps this right as k8s.io/api grows new volume types.
func exactlyOneSource(union any, fldPath *field.Path, noneMsg, manyMsg string) field.ErrorList {
	v := reflect.ValueOf(union).Elem()
	var allErrs field.ErrorList
	n := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		n++
		if n > 1 {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), manyMsg))
		}
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, noneMsg))
	}
	return allErrs
}

func validateProbe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	allErrs := validateHandler(&p.ProbeHandler, false, fldPath)
	for _, f := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(f.v), fldPath.Child(f.name))...)
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
}

// validateHandler checks that a probe or lifecycle hook says exactly one thing to do.
func validateHandler(h *corev1.ProbeHandler, sleep bool, fldPath *field.Path) field.ErrorList {
	allErrs := exactlyOneSource(h, fldPath, "must specify a handler type", "may not specify more than 1 handler type")
	if sleep {
		// A lifecycle hook's sleep is a handler ProbeHandler does not have.
		switch len(allErrs) {
		case 1:
			if allErrs[0].Type == field.ErrorTypeRequired {
				allErrs = nil
			}
		case 0:
			allErrs = field.ErrorList{field.Forbidden(fldPath.Child("sleep"), "may not specify more than 1 handler type")}
		}
	}
	if e := h.Exec; e != nil && len(e.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if g := h.HTTPGet; g != nil {
		gp := fldPath.Child("httpGet")
		allErrs = append(allErrs, portNumOrName(gp.Child("port"), g.Port)...)
		if g.Scheme != "" {
			allErrs = append(allErrs, enum(gp.Child("scheme"), g.Scheme, uriSchemes)...)
		}
	}
	if t := h.TCPSocket; t != nil {
		allErrs = append(allErrs, portNumOrName(fldPath.Child("tcpSocket", "port"), t.Port)...)
	}
	if g := h.GRPC; g != nil {
		allErrs = append(allErrs, portNum(fldPath.Child("grpc", "port"), g.Port)...)
	}
	return allErrs
}

func validateToleration(t corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if t.Key != "" {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, fldPath.Child("key"))...)
	}
	if t.Key == "" && t.Operator != corev1.TolerationOpExists {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
	}
	if t.Operator != "" {
		allErrs = append(allErrs, enum(fldPath.Child("operator"), t.Operator, tolerationOps)...)
	}
	if t.Operator == corev1.TolerationOpExists && t.Value != "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), t.Operator, "value must be empty when `operator` is 'Exists'"))
	}
	if t.Effect != "" {
		allErrs = append(allErrs, enum(fldPath.Child("effect"), t.Effect, taintEffects)...)
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
	}
	return allErrs
}

// podUpdateMessage is Kubernetes' wording, which users search for.
const podUpdateMessage = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

func validatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	if o, n := oldPod.Spec.ActiveDeadlineSeconds, newPod.Spec.ActiveDeadlineSeconds; o != nil {
		// The deadline may only come closer.
		if n == nil {
			allErrs = append(allErrs, field.Invalid(specPath.Child("activeDeadlineSeconds"), n, "must not update from a positive integer to nil value"))
		} else if *n > *o {
			allErrs = append(allErrs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *n, "must be less than or equal to previous value"))
		}
	}
	allErrs = append(allErrs, validateEphemeralContainersUpdate(newPod, oldPod)...)
	if len(newPod.Spec.Containers) != len(oldPod.Spec.Containers) || len(newPod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return append(allErrs, field.Forbidden(specPath, podUpdateMessage))
	}
	// Copy what may change from the new spec onto the old one; any remaining difference is a
	// change to a field that may not change.
	merged := oldPod.Spec.DeepCopy()
	for i := range merged.Containers {
		merged.Containers[i].Image = newPod.Spec.Containers[i].Image
	}
	for i := range merged.InitContainers {
		merged.InitContainers[i].Image = newPod.Spec.InitContainers[i].Image
	}
	merged.ActiveDeadlineSeconds = newPod.Spec.ActiveDeadlineSeconds
	// Ephemeral containers change only through pods/ephemeralcontainers, checked above.
	merged.EphemeralContainers = newPod.Spec.EphemeralContainers
	if o := oldPod.Spec.TerminationGracePeriodSeconds; o != nil && *o < 0 {
		if n := newPod.Spec.TerminationGracePeriodSeconds; n != nil && *n == 1 {
			merged.TerminationGracePeriodSeconds = n
		}
	}
	if hasAll(newPod.Spec.Tolerations, oldPod.Spec.Tolerations) {
		merged.Tolerations = newPod.Spec.Tolerations
	}
	if !equality.Semantic.DeepEqual(merged, &newPod.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, podUpdateMessage))
	}
	return allErrs
}

// hasAll reports whether every old toleration is still in next; tolerations may only be added.
func hasAll(next, old []corev1.Toleration) bool {
	for _, o := range old {
		found := false
		for _, n := range next {
			if equality.Semantic.DeepEqual(o, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func portNumOrName(fldPath *field.Path, p intstr.IntOrString) field.ErrorList {
	var allErrs field.ErrorList
	switch p.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(p.IntVal)) {
			allErrs = append(allErrs, field.Invalid(fldPath, p.IntVal, msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(p.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, p.StrVal, msg))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, p.String(), "must be a port number or name"))
	}
	return allErrs
}
