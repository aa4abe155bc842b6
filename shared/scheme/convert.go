package scheme

import (
	"encoding/json"
	"fmt"
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// What autoscaling/v1 cannot say of an autoscaling/v2 HorizontalPodAutoscaler travels in these
// annotations of the v1 object, as Kubernetes keeps it, so a read-modify-write through v1
// loses nothing. The values are the v2 fields' JSON.
const (
	// HPAMetricsAnnotation holds spec.metrics other than the CPU utilization target.
	HPAMetricsAnnotation = "autoscaling.alpha.kubernetes.io/metrics"
	// HPACurrentMetricsAnnotation holds status.currentMetrics.
	HPACurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	// HPAConditionsAnnotation holds status.conditions.
	HPAConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	// HPABehaviorAnnotation holds spec.behavior.
	HPABehaviorAnnotation = "autoscaling.alpha.kubernetes.io/behavior"
)

func init() {
	utilruntime.Must(Scheme.AddConversionFunc((*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil),
		func(a, b any, _ conversion.Scope) error {
			return hpaToV1(a.(*autoscalingv2.HorizontalPodAutoscaler), b.(*autoscalingv1.HorizontalPodAutoscaler))
		}))
	utilruntime.Must(Scheme.AddConversionFunc((*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil),
		func(a, b any, _ conversion.Scope) error {
			return hpaToV2(a.(*autoscalingv1.HorizontalPodAutoscaler), b.(*autoscalingv2.HorizontalPodAutoscaler))
		}))
}

// Convert returns obj, an object or list of a served version of to's kind, as to's version.
// An object already of that version is returned as it is.
func Convert(obj runtime.Object, to *Resource) (runtime.Object, error) {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		list := to.NewList()
		out := make([]runtime.Object, len(items))
		for i, item := range items {
			if out[i], err = Convert(item, to); err != nil {
				return nil, err
			}
		}
		if err := meta.SetList(list, out); err != nil {
			return nil, err
		}
		dst, err := meta.ListAccessor(list)
		if err != nil {
			return nil, err
		}
		dst.SetResourceVersion(lm.GetResourceVersion())
		dst.SetContinue(lm.GetContinue())
		dst.SetRemainingItemCount(lm.GetRemainingItemCount())
		list.GetObjectKind().SetGroupVersionKind(to.GVK.GroupVersion().WithKind(to.GVK.Kind + "List"))
		return list, nil
	}
	out := to.New()
	if reflect.TypeOf(out) == reflect.TypeOf(obj) {
		return obj, nil
	}
	if err := Scheme.Convert(obj, out, nil); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(to.GVK)
	return out, nil
}

// isCPUUtilization reports whether m is the metric autoscaling/v1's
// targetCPUUtilizationPercentage stands for.
func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil
}

func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler, out *autoscalingv1.HorizontalPodAutoscaler) error {
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{
			Kind: in.Spec.ScaleTargetRef.Kind, Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion,
		},
		MinReplicas: in.Spec.MinReplicas,
		MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			v := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &v
			continue
		}
		others = append(others, *m.DeepCopy())
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil {
			v := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &v
			break
		}
	}
	// Each annotation is set only when it has something to say.
	for key, v := range map[string]any{
		HPAMetricsAnnotation:        others,
		HPACurrentMetricsAnnotation: in.Status.CurrentMetrics,
		HPAConditionsAnnotation:     in.Status.Conditions,
		HPABehaviorAnnotation:       in.Spec.Behavior,
	} {
		switch x := v.(type) {
		case []autoscalingv2.MetricSpec:
			if len(x) == 0 {
				continue
			}
		case []autoscalingv2.MetricStatus:
			if len(x) == 0 {
				continue
			}
		case []autoscalingv2.HorizontalPodAutoscalerCondition:
			if len(x) == 0 {
				continue
			}
		case *autoscalingv2.HorizontalPodAutoscalerBehavior:
			if x == nil {
				continue
			}
		}
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(data)
	}
	return nil
}

// AnnotationError is a v1 HorizontalPodAutoscaler annotation that does not hold what it should.
type AnnotationError struct {
	Key   string
	Value string
	Err   error
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("metadata.annotations[%s]: Invalid value: %v", e.Key, e.Err)
}

func (e *AnnotationError) Unwrap() error { return e.Err }

func hpaToV2(in *autoscalingv1.HorizontalPodAutoscaler, out *autoscalingv2.HorizontalPodAutoscaler) error {
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
			Kind: in.Spec.ScaleTargetRef.Kind, Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion,
		},
		MinReplicas: in.Spec.MinReplicas,
		MaxReplicas: in.Spec.MaxReplicas,
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		v := *p
		out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &v}},
		})
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		v := *p
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: &v}},
		}}
	}
	var others []autoscalingv2.MetricSpec
	var current []autoscalingv2.MetricStatus
	for key, into := range map[string]any{
		HPAMetricsAnnotation:        &others,
		HPACurrentMetricsAnnotation: &current,
		HPAConditionsAnnotation:     &out.Status.Conditions,
		HPABehaviorAnnotation:       &out.Spec.Behavior,
	} {
		data, ok := out.Annotations[key]
		if !ok {
			continue
		}
		delete(out.Annotations, key)
		if err := json.Unmarshal([]byte(data), into); err != nil {
			return &AnnotationError{Key: key, Value: data, Err: err}
		}
	}
	out.Spec.Metrics = append(out.Spec.Metrics, others...)
	if current != nil {
		// The annotation has every metric, the CPU one with its raw value too.
		out.Status.CurrentMetrics = current
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return nil
}
