package validation

import (
	"bytes"
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	alwaysRestart    = []corev1.RestartPolicy{corev1.RestartPolicyAlways}
	jobRestarts      = []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	strategyTypes    = []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}
	completionModes  = []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}
	replacements     = []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}
	metricTypes      = []autoscalingv2.MetricSourceType{autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType}
	targetTypes      = []autoscalingv2.MetricTargetType{autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType}
	scalingPolicies  = []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy}
	selectPolicies   = []autoscalingv2.ScalingPolicySelect{autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect}
	selectorOpts     = metav1validation.LabelSelectorValidationOptions{}
	selectorMismatch = "`selector` does not match template `labels`"
)

// validateSelectorAndTemplate checks the selector/template pair shared by Deployments,
// ReplicaSets and Jobs: a non-empty valid selector that selects the template's labels.
func validateSelectorAndTemplate(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, fldPath *field.Path, kindName string, restarts []corev1.RestartPolicy) field.ErrorList {
	var allErrs field.ErrorList
	selPath := fldPath.Child("selector")
	if sel == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel, selectorOpts, selPath)...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selPath, sel, "empty selector is invalid for "+kindName))
		}
	}
	tmplPath := fldPath.Child("template")
	if sel != nil && len(allErrs) == 0 {
		// Only a valid selector can be converted; errors above already explain the rest.
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err == nil && !s.Matches(labels.Set(tmpl.Labels)) {
			allErrs = append(allErrs, field.Invalid(tmplPath.Child("metadata", "labels"), tmpl.Labels, selectorMismatch))
		}
	}
	allErrs = append(allErrs, validatePodTemplate(tmpl, tmplPath, restarts)...)
	return allErrs
}

// Deployment is how Deployments are validated.
var Deployment = Rules[*appsv1.Deployment]{Name: dnsSubdomain, Spec: validateDeployment, Update: validateDeploymentUpdate}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &d.Spec
	allErrs := nonNegative(sp.Child("replicas"), spec.Replicas)
	allErrs = append(allErrs, validateSelectorAndTemplate(spec.Selector, &spec.Template, sp, "deployment", alwaysRestart)...)
	allErrs = append(allErrs, noDeadlineInTemplate(&spec.Template, sp)...)
	allErrs = append(allErrs, validateStrategy(&spec.Strategy, sp.Child("strategy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	allErrs = append(allErrs, nonNegative(sp.Child("revisionHistoryLimit"), spec.RevisionHistoryLimit)...)
	if p := spec.ProgressDeadlineSeconds; p != nil {
		allErrs = append(allErrs, nonNegative(sp.Child("progressDeadlineSeconds"), p)...)
		if *p <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(sp.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func noDeadlineInTemplate(t *corev1.PodTemplateSpec, sp *field.Path) field.ErrorList {
	if t.Spec.ActiveDeadlineSeconds == nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(sp.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported")}
}

func validateStrategy(st *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := enum(fldPath.Child("type"), st.Type, strategyTypes)
	ru := st.RollingUpdate
	if st.Type == appsv1.RecreateDeploymentStrategyType && ru != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
	}
	if st.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil {
		return allErrs
	}
	rp := fldPath.Child("rollingUpdate")
	allErrs = append(allErrs, intOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
	allErrs = append(allErrs, intOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
	if ru.MaxUnavailable != nil && ru.MaxUnavailable.Type == intstr.String && percent(*ru.MaxUnavailable) > 100 {
		allErrs = append(allErrs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable.StrVal, "must not be greater than 100%"))
	}
	if isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
		// Neither extra pods nor missing pods allowed: the rollout could never progress.
		allErrs = append(allErrs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	return allErrs
}

func intOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		return apivalidation.ValidateNonnegativeField(int64(v.IntVal), fldPath)
	}
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidPercent(v.StrVal) {
		allErrs = append(allErrs, field.Invalid(fldPath, v.StrVal, msg))
	}
	return allErrs
}

// percent returns the number of a valid "N%" value, or -1.
func percent(v intstr.IntOrString) int {
	if len(validation.IsValidPercent(v.StrVal)) != 0 {
		return -1
	}
	n := 0
	for _, c := range strings.TrimSuffix(v.StrVal, "%") {
		if n > 1000 {
			return n // large enough to be rejected; avoids overflow on long inputs
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return true
	}
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	return percent(*v) == 0
}

func validateDeploymentUpdate(n, o *appsv1.Deployment) field.ErrorList {
	return apivalidation.ValidateImmutableField(n.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))
}

// ReplicaSet is how ReplicaSets are validated.
var ReplicaSet = Rules[*appsv1.ReplicaSet]{Name: dnsSubdomain, Spec: validateReplicaSet, Update: validateReplicaSetUpdate}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := nonNegative(sp.Child("replicas"), rs.Spec.Replicas)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(rs.Spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateSelectorAndTemplate(rs.Spec.Selector, &rs.Spec.Template, sp, "replicaset", alwaysRestart)...)
	allErrs = append(allErrs, noDeadlineInTemplate(&rs.Spec.Template, sp)...)
	return allErrs
}

func validateReplicaSetUpdate(n, o *appsv1.ReplicaSet) field.ErrorList {
	return apivalidation.ValidateImmutableField(n.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))
}

// Job is how Jobs are validated.
var Job = Rules[*batchv1.Job]{Name: dnsSubdomain, Spec: validateJob, Update: validateJobUpdate}

func validateJob(j *batchv1.Job) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := validateSelectorAndTemplate(j.Spec.Selector, &j.Spec.Template, sp, "job", jobRestarts)
	return append(allErrs, validateJobSpec(&j.Spec, sp)...)
}

// validateJobSpec checks a Job's spec but its selector and template, which a Job and a
// CronJob's job template check differently.
func validateJobSpec(spec *batchv1.JobSpec, sp *field.Path) field.ErrorList {
	allErrs := nonNegative(sp.Child("parallelism"), spec.Parallelism)
	allErrs = append(allErrs, nonNegative(sp.Child("completions"), spec.Completions)...)
	allErrs = append(allErrs, nonNegative(sp.Child("backoffLimit"), spec.BackoffLimit)...)
	allErrs = append(allErrs, nonNegative(sp.Child("ttlSecondsAfterFinished"), spec.TTLSecondsAfterFinished)...)
	allErrs = append(allErrs, positive(sp.Child("activeDeadlineSeconds"), spec.ActiveDeadlineSeconds)...)
	if m := spec.CompletionMode; m != nil {
		allErrs = append(allErrs, enum(sp.Child("completionMode"), *m, completionModes)...)
		if *m == batchv1.IndexedCompletion && spec.Completions == nil {
			allErrs = append(allErrs, field.Required(sp.Child("completions"), "when completion mode is Indexed"))
		}
	}
	if p := spec.PodReplacementPolicy; p != nil {
		allErrs = append(allErrs, enum(sp.Child("podReplacementPolicy"), *p, replacements)...)
		if spec.PodFailurePolicy != nil && *p != batchv1.Failed {
			allErrs = append(allErrs, field.NotSupported(sp.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		}
	}
	if spec.BackoffLimitPerIndex != nil && (spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion) {
		allErrs = append(allErrs, field.Invalid(sp.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
	}
	return allErrs
}

func validateJobUpdate(n, o *batchv1.Job) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := apivalidation.ValidateImmutableField(n.Spec.Selector, o.Spec.Selector, sp.Child("selector"))
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(n.Spec.CompletionMode, o.Spec.CompletionMode, sp.Child("completionMode"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(n.Spec.Completions, o.Spec.Completions, sp.Child("completions"))...)
	// Kubernetes lets a suspended Job's template change, so a queue can adjust it before the
	// Job starts; a running Job's pods must all come from one template.
	suspended := o.Spec.Suspend != nil && *o.Spec.Suspend
	if !suspended && !equality.Semantic.DeepEqual(n.Spec.Template, o.Spec.Template) {
		allErrs = append(allErrs, field.Invalid(sp.Child("template"), n.Spec.Template, "field is immutable"))
	}
	return allErrs
}

// HorizontalPodAutoscaler is how HorizontalPodAutoscalers are validated; their names are path segments, as in Kubernetes.
var HorizontalPodAutoscaler = Rules[*autoscalingv2.HorizontalPodAutoscaler]{Name: pathSegment, Spec: validateHPA}

func validateHPA(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &h.Spec
	var allErrs field.ErrorList
	ref := sp.Child("scaleTargetRef")
	if spec.ScaleTargetRef.Kind == "" {
		allErrs = append(allErrs, field.Required(ref.Child("kind"), ""))
	} else {
		allErrs = append(allErrs, nameErrs(ref.Child("kind"), spec.ScaleTargetRef.Kind, pathName)...)
	}
	if spec.ScaleTargetRef.Name == "" {
		allErrs = append(allErrs, field.Required(ref.Child("name"), ""))
	} else {
		allErrs = append(allErrs, nameErrs(ref.Child("name"), spec.ScaleTargetRef.Name, pathName)...)
	}
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(sp.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(sp.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		allErrs = append(allErrs, field.Invalid(sp.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	for i := range spec.Metrics {
		allErrs = append(allErrs, validateMetric(&spec.Metrics[i], sp.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		bp := sp.Child("behavior")
		allErrs = append(allErrs, validateScalingRules(b.ScaleUp, bp.Child("scaleUp"))...)
		allErrs = append(allErrs, validateScalingRules(b.ScaleDown, bp.Child("scaleDown"))...)
	}
	return allErrs
}

func pathName(s string) []string { return path.IsValidPathSegmentName(s) }

func validateMetric(m *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	allErrs := enum(fldPath.Child("type"), m.Type, metricTypes)
	sources := []struct {
		t   autoscalingv2.MetricSourceType
		f   string
		set bool
	}{
		{autoscalingv2.ObjectMetricSourceType, "object", m.Object != nil},
		{autoscalingv2.PodsMetricSourceType, "pods", m.Pods != nil},
		{autoscalingv2.ResourceMetricSourceType, "resource", m.Resource != nil},
		{autoscalingv2.ContainerResourceMetricSourceType, "containerResource", m.ContainerResource != nil},
		{autoscalingv2.ExternalMetricSourceType, "external", m.External != nil},
	}
	for _, s := range sources {
		switch {
		case s.t == m.Type && !s.set:
			allErrs = append(allErrs, field.Required(fldPath.Child(s.f), "must populate information for the given metric source"))
		case s.t != m.Type && s.set:
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(s.f), "must populate the given metric source only"))
		}
	}
	if r := m.Resource; r != nil {
		rp := fldPath.Child("resource")
		if r.Name == "" {
			allErrs = append(allErrs, field.Required(rp.Child("name"), "must specify a resource name"))
		}
		allErrs = append(allErrs, validateTarget(&r.Target, rp.Child("target"), true)...)
	}
	if r := m.ContainerResource; r != nil {
		rp := fldPath.Child("containerResource")
		if r.Name == "" {
			allErrs = append(allErrs, field.Required(rp.Child("name"), "must specify a resource name"))
		}
		if r.Container == "" {
			allErrs = append(allErrs, field.Required(rp.Child("container"), "must specify a container"))
		}
		allErrs = append(allErrs, validateTarget(&r.Target, rp.Child("target"), true)...)
	}
	if p := m.Pods; p != nil {
		allErrs = append(allErrs, metricIdentifier(p.Metric, fldPath.Child("pods", "metric"))...)
		allErrs = append(allErrs, validateTarget(&p.Target, fldPath.Child("pods", "target"), false)...)
	}
	if o := m.Object; o != nil {
		op := fldPath.Child("object")
		if o.DescribedObject.Kind == "" {
			allErrs = append(allErrs, field.Required(op.Child("describedObject", "kind"), ""))
		}
		if o.DescribedObject.Name == "" {
			allErrs = append(allErrs, field.Required(op.Child("describedObject", "name"), ""))
		}
		allErrs = append(allErrs, metricIdentifier(o.Metric, op.Child("metric"))...)
		allErrs = append(allErrs, validateTarget(&o.Target, op.Child("target"), false)...)
	}
	if e := m.External; e != nil {
		allErrs = append(allErrs, metricIdentifier(e.Metric, fldPath.Child("external", "metric"))...)
		allErrs = append(allErrs, validateTarget(&e.Target, fldPath.Child("external", "target"), false)...)
	}
	return allErrs
}

func metricIdentifier(id autoscalingv2.MetricIdentifier, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if id.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "must specify a metric name"))
	} else {
		allErrs = append(allErrs, nameErrs(fldPath.Child("name"), id.Name, pathName)...)
	}
	if id.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(id.Selector, selectorOpts, fldPath.Child("selector"))...)
	}
	return allErrs
}

// validateTarget checks that the field its type names is set; utilization only makes sense
// for resource metrics.
func validateTarget(t *autoscalingv2.MetricTarget, fldPath *field.Path, resource bool) field.ErrorList {
	allErrs := enum(fldPath.Child("type"), t.Type, targetTypes)
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	if t.Value != nil && t.Value.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	switch t.Type {
	case autoscalingv2.UtilizationMetricType:
		if !resource {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), t.Type, []autoscalingv2.MetricTargetType{autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType}))
		} else if t.AverageUtilization == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageUtilization"), "must set averageUtilization when type is Utilization"))
		}
	case autoscalingv2.ValueMetricType:
		if t.Value == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("value"), "must set value when type is Value"))
		}
	case autoscalingv2.AverageValueMetricType:
		if t.AverageValue == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageValue"), "must set averageValue when type is AverageValue"))
		}
	}
	return allErrs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, validation.InclusiveRangeError(0, 3600)))
	}
	if s := r.SelectPolicy; s != nil && !contains(selectPolicies, *s) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("selectPolicy"), *s, selectPolicies))
	}
	if len(r.Policies) == 0 && (r.SelectPolicy == nil || *r.SelectPolicy != autoscalingv2.DisabledPolicySelect) {
		allErrs = append(allErrs, field.Required(fldPath.Child("policies"), "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		pp := fldPath.Child("policies").Index(i)
		allErrs = append(allErrs, enum(pp.Child("type"), p.Type, scalingPolicies)...)
		if p.Value <= 0 {
			allErrs = append(allErrs, field.Invalid(pp.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 || p.PeriodSeconds > 1800 {
			allErrs = append(allErrs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, validation.InclusiveRangeError(1, 1800)))
		}
	}
	return allErrs
}

// ControllerRevision is how ControllerRevisions are validated, as upstream: data is required
// and never changes, and the revision is not negative.
var ControllerRevision = Rules[*appsv1.ControllerRevision]{Spec: validateControllerRevision, Update: validateControllerRevisionUpdate}

func validateControllerRevision(r *appsv1.ControllerRevision) field.ErrorList {
	var allErrs field.ErrorList
	if r.Data.Raw == nil && r.Data.Object == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(allErrs, nonNegative(field.NewPath("revision"), &r.Revision)...)
}

func validateControllerRevisionUpdate(newObj, oldObj *appsv1.ControllerRevision) field.ErrorList {
	if !sameJSON(newObj.Data.Raw, oldObj.Data.Raw) {
		return field.ErrorList{field.Invalid(field.NewPath("data"), "", "field is immutable")}
	}
	return nil
}

// sameJSON reports whether two JSON texts are the same once their spacing is left out.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
