package podautoscaler

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and event reasons, Kubernetes' own.
const (
	ReasonSucceededGetScale    = "SucceededGetScale"
	ReasonFailedGetScale       = "FailedGetScale"
	ReasonSucceededRescale     = "SucceededRescale"
	ReasonFailedRescale        = "FailedRescale"
	ReasonFailedUpdateScale    = "FailedUpdateScale"
	ReasonReadyForNewScale     = "ReadyForNewScale"
	ReasonScaleDownStable      = "ScaleDownStabilized"
	ReasonValidMetricFound     = "ValidMetricFound"
	ReasonScalingDisabled      = "ScalingDisabled"
	ReasonFailedGetResource    = "FailedGetResourceMetric"
	ReasonInvalidMetric        = "InvalidMetricSourceType"
	ReasonInvalidSelector      = "InvalidSelector"
	EventSuccessfulRescale     = "SuccessfulRescale"
	EventFailedComputeReplicas = "FailedComputeMetricsReplicas"
)

// Input is what a decision looks at: the HPA, its target's scale, the target's pods and
// their samples.
type Input struct {
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Current is the target's spec.replicas, read through its scale subresource.
	Current int32
	Pods    []*corev1.Pod
	// Metrics are the pods' samples of each resource the HPA names; MetricErrors why a
	// resource's samples could not be read.
	Metrics      map[corev1.ResourceName]PodMetrics
	MetricErrors map[corev1.ResourceName]error
	Now          time.Time
}

// Decision is what to do: the replica count to set (when Rescale), why, the HPA's new
// status (LastScaleTime and the AbleToScale condition of the rescale are the controller's,
// which knows whether the write worked), and warnings to record as events.
type Decision struct {
	Desired  int32
	Rescale  bool
	Reason   string
	Status   autoscalingv2.HorizontalPodAutoscalerStatus
	Warnings []Warning
}

// Warning is an event to record on the HPA.
type Warning struct{ Reason, Message string }

// Decide works out an HPA's replica count as Kubernetes' controller does: each metric's
// proposal, the largest wins; min and max replicas; the behavior's stabilization windows
// and rate policies (a nil behavior is DefaultBehavior). It records the recommendation in h.
func Decide(in Input, h *History) Decision {
	hpa := in.HPA
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	st := hpa.Status.DeepCopy()
	st.ObservedGeneration = &hpa.Generation
	st.CurrentReplicas = in.Current
	d := Decision{Desired: in.Current}
	cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, format string, args ...any) {
		SetCondition(st, t, s, reason, fmt.Sprintf(format, args...), in.Now)
	}
	cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededGetScale, "the HPA controller was able to get the target's current scale")
	if len(h.Recommendations) == 0 {
		// As after a controller restart: the current size counts as recommended now, so a
		// scale-down waits for its window rather than happening at once.
		h.Recommendations = []Recommendation{{Replicas: in.Current, At: in.Now}}
	}
	desired := in.Current
	switch {
	case in.Current == 0 && minReplicas != 0:
		cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonScalingDisabled, "scaling is disabled since the replica count of the target is zero")
		st.DesiredReplicas, d.Desired = 0, 0
		d.Status = *st
		return d
	case in.Current > hpa.Spec.MaxReplicas:
		desired, d.Reason = hpa.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas"
	case in.Current < minReplicas:
		desired, d.Reason = minReplicas, "Current number of replicas below Spec.MinReplicas"
	default:
		proposal, name, statuses, warn, invalid, err := proposeReplicas(in, st)
		st.CurrentMetrics = statuses
		if err != nil {
			d.Warnings = append(d.Warnings, warn, Warning{Reason: EventFailedComputeReplicas,
				Message: fmt.Sprintf("invalid metrics (%d invalid out of %d), first error is: %v", invalid, len(hpa.Spec.Metrics), err)})
			st.DesiredReplicas = in.Current
			d.Status = *st
			return d
		}
		cond(autoscalingv2.ScalingActive, corev1.ConditionTrue, ReasonValidMetricFound, "the HPA was able to successfully calculate a replica count from %s", name)
		switch {
		case proposal > in.Current:
			d.Reason = name + " above target"
		case proposal < in.Current:
			d.Reason = "All metrics below target"
		}
		b := withDefaults(hpa.Spec.Behavior)
		stable := h.Stabilize(b, in.Current, proposal, in.Now)
		if stable != proposal {
			cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonScaleDownStable, "recent recommendations were higher than current one, applying the highest recent recommendation")
		} else {
			cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonReadyForNewScale, "recommended size matches current size")
		}
		lim := h.Limit(b, minReplicas, hpa.Spec.MaxReplicas, in.Current, stable, in.Now)
		limited := corev1.ConditionFalse
		if lim.Replicas != stable {
			limited = corev1.ConditionTrue
		}
		cond(autoscalingv2.ScalingLimited, limited, lim.Reason, "%s", lim.Message)
		desired = lim.Replicas
	}
	d.Desired, d.Rescale = desired, desired != in.Current
	st.DesiredReplicas = desired
	d.Status = *st
	return d
}

// proposeReplicas asks every metric and keeps the largest proposal. It fails when every
// metric failed, or when some did and the others would scale down (a metric that cannot be
// read might want more).
func proposeReplicas(in Input, st *autoscalingv2.HorizontalPodAutoscalerStatus) (int32, string, []autoscalingv2.MetricStatus, Warning, int, error) {
	specs := in.HPA.Spec.Metrics
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	var replicas int32
	var name string
	invalid := 0
	var firstErr error
	var firstWarn Warning
	for i, spec := range specs {
		proposal, metricName, status, reason, err := proposeOne(in, spec)
		if err != nil {
			if invalid == 0 {
				firstErr = err
				firstWarn = Warning{Reason: reason, Message: err.Error()}
				SetCondition(st, autoscalingv2.ScalingActive, corev1.ConditionFalse, reason, "the HPA was unable to compute the replica count: "+err.Error(), in.Now)
			}
			invalid++
			continue
		}
		statuses[i] = status
		if replicas == 0 || proposal > replicas {
			replicas, name = proposal, metricName
		}
	}
	if invalid >= len(specs) || (invalid > 0 && replicas < in.Current) {
		if firstErr == nil {
			firstErr = fmt.Errorf("no metrics to compute a replica count from")
			firstWarn = Warning{Reason: ReasonInvalidMetric, Message: firstErr.Error()}
		}
		return 0, "", statuses, firstWarn, invalid, firstErr
	}
	return replicas, name, statuses, Warning{}, 0, nil
}

// proposeOne is one metric's proposal, its name for events and conditions, and its status.
func proposeOne(in Input, spec autoscalingv2.MetricSpec) (int32, string, autoscalingv2.MetricStatus, string, error) {
	if spec.Type != autoscalingv2.ResourceMetricSourceType || spec.Resource == nil {
		return 0, "", autoscalingv2.MetricStatus{}, ReasonInvalidMetric, fmt.Errorf("unsupported metric source type %q: only Resource metrics are served", spec.Type)
	}
	res := spec.Resource.Name
	if err := in.MetricErrors[res]; err != nil {
		return 0, "", autoscalingv2.MetricStatus{}, ReasonFailedGetResource, fmt.Errorf("failed to get %s utilization: unable to get metrics for resource %s: %w", res, res, err)
	}
	metrics := in.Metrics[res]
	target := spec.Resource.Target
	status := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: res}}
	switch {
	case target.AverageValue != nil:
		est, err := AverageValueReplicas(in.Current, target.AverageValue.MilliValue(), res, in.Pods, metrics, in.Now)
		if err != nil {
			return 0, "", status, ReasonFailedGetResource, fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		status.Resource.Current.AverageValue = resource.NewMilliQuantity(est.Usage, format(res))
		return est.Replicas, fmt.Sprintf("%s resource", res), status, "", nil
	case target.AverageUtilization != nil:
		est, err := UtilizationReplicas(in.Current, *target.AverageUtilization, res, in.Pods, metrics, in.Now)
		if err != nil {
			return 0, "", status, ReasonFailedGetResource, fmt.Errorf("failed to get %s utilization: %w", res, err)
		}
		u := est.Utilization
		status.Resource.Current.AverageUtilization = &u
		status.Resource.Current.AverageValue = resource.NewMilliQuantity(est.Usage, format(res))
		return est.Replicas, fmt.Sprintf("%s resource utilization (percentage of request)", res), status, "", nil
	}
	return 0, "", status, ReasonInvalidMetric, fmt.Errorf("invalid resource metric source: neither a utilization target nor a value target was set")
}

func format(res corev1.ResourceName) resource.Format {
	if res == corev1.ResourceMemory {
		return resource.BinarySI
	}
	return resource.DecimalSI
}

// SetCondition sets a condition, keeping its transition time unless its status changes.
func SetCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = s, reason, message
		return
	}
	st.Conditions = append(st.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}
