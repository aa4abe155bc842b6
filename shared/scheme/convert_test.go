package scheme

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func hpaResource(t *testing.T, version string) *Resource {
	t.Helper()
	r, ok := ByGVR(schema.GroupVersionResource{Group: "autoscaling", Version: version, Resource: "horizontalpodautoscalers"})
	if !ok {
		t.Fatalf("autoscaling/%s horizontalpodautoscalers not served", version)
	}
	return r
}

func i32(v int32) *int32 { return &v }

func cpuTarget(v int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: i32(v)}}}
}

// Every v2 HorizontalPodAutoscaler survives a trip through autoscaling/v1 unchanged, and v1
// shows what it can in its own fields.
func TestHPAConversionRoundTrip(t *testing.T) {
	v1res, v2res := hpaResource(t, "v1"), hpaResource(t, "v2")
	if v1res.Stored() != v2res {
		t.Fatal("autoscaling/v1 is not stored as autoscaling/v2")
	}
	now := metav1.Now()
	memory := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(1<<20, resource.BinarySI)}}}
	cases := []struct {
		name       string
		spec       autoscalingv2.HorizontalPodAutoscalerSpec
		status     autoscalingv2.HorizontalPodAutoscalerStatus
		wantTarget *int32
		wantCPU    *int32
		wantAnns   []string
	}{
		{name: "cpu only", spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4, MinReplicas: i32(1), Metrics: []autoscalingv2.MetricSpec{cpuTarget(50)}},
			wantTarget: i32(50)},
		{name: "no metrics", spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 2}},
		{name: "cpu and memory, behavior, status",
			spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{cpuTarget(60), memory},
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 15}}}}},
			status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3, LastScaleTime: &now, ObservedGeneration: func() *int64 { g := int64(3); return &g }(),
				CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: i32(90), AverageValue: resource.NewMilliQuantity(90, resource.DecimalSI)}}}},
				Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}}},
			wantTarget: i32(60), wantCPU: i32(90),
			wantAnns: []string{HPAMetricsAnnotation, HPABehaviorAnnotation, HPACurrentMetricsAnnotation, HPAConditionsAnnotation}},
		{name: "cpu as an average value is not v1's target", spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewMilliQuantity(200, resource.DecimalSI)}}}}},
			wantAnns: []string{HPAMetricsAnnotation}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"a": "b"}, ResourceVersion: "7"},
				Spec:       tc.spec, Status: tc.status,
			}
			in.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
			in.SetGroupVersionKind(v2res.GVK)
			out, err := Convert(in, v1res)
			if err != nil {
				t.Fatal(err)
			}
			v1 := out.(*autoscalingv1.HorizontalPodAutoscaler)
			if v1.APIVersion != "autoscaling/v1" || v1.ResourceVersion != "7" || v1.Spec.ScaleTargetRef.Name != "web" {
				t.Fatalf("v1 %+v", v1)
			}
			if diff := cmp.Diff(tc.wantTarget, v1.Spec.TargetCPUUtilizationPercentage); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCPU, v1.Status.CurrentCPUUtilizationPercentage); diff != "" {
				t.Errorf("current cpu (-want +got):\n%s", diff)
			}
			if len(v1.Annotations) != len(tc.wantAnns) {
				t.Errorf("annotations %v, want %v", v1.Annotations, tc.wantAnns)
			}
			back, err := Convert(v1, v2res)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in, back); diff != "" {
				t.Fatalf("round trip (-v2 +back):\n%s", diff)
			}
		})
	}
}

func TestHPAConversionBadAnnotation(t *testing.T) {
	in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{HPABehaviorAnnotation: "{"}}}
	_, err := Convert(in, hpaResource(t, "v2"))
	var ae *AnnotationError
	if !errors.As(err, &ae) || ae.Key != HPABehaviorAnnotation {
		t.Fatalf("err %v", err)
	}
}
