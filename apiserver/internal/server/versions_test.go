package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/scheme"
)

// HorizontalPodAutoscalers are stored as autoscaling/v2 and served as autoscaling/v1 too.
func TestHPAServedInTwoVersions(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	v1Path := "/apis/autoscaling/v1/namespaces/" + ns + "/horizontalpodautoscalers"
	v2Path := "/apis/autoscaling/v2/namespaces/" + ns + "/horizontalpodautoscalers"
	events := h.openWatch(v1Path + "?watch=true")

	t.Run("v1 create reads as v2", func(t *testing.T) {
		var created autoscalingv1.HorizontalPodAutoscaler
		h.mustDo(http.StatusCreated, "POST", v1Path, "", map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"name": "web"},
			"spec": map[string]any{
				"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
				"minReplicas":    1, "maxReplicas": 4, "targetCPUUtilizationPercentage": 50,
			},
		}, &created)
		if created.APIVersion != "autoscaling/v1" || created.Spec.TargetCPUUtilizationPercentage == nil || *created.Spec.TargetCPUUtilizationPercentage != 50 {
			t.Fatalf("created %s with target %v", created.APIVersion, created.Spec.TargetCPUUtilizationPercentage)
		}
		var v2 autoscalingv2.HorizontalPodAutoscaler
		h.mustDo(http.StatusOK, "GET", v2Path+"/web", "", nil, &v2)
		if len(v2.Spec.Metrics) != 1 {
			t.Fatalf("v2 metrics %+v", v2.Spec.Metrics)
		}
		m := v2.Spec.Metrics[0]
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource.Name != corev1.ResourceCPU ||
			m.Resource.Target.Type != autoscalingv2.UtilizationMetricType || *m.Resource.Target.AverageUtilization != 50 {
			t.Fatalf("v2 metric %+v", m)
		}
		if v2.ResourceVersion != created.ResourceVersion || v2.UID != created.UID {
			t.Fatalf("v2 is another object: %s/%s vs %s/%s", v2.UID, v2.ResourceVersion, created.UID, created.ResourceVersion)
		}
		if len(v2.Annotations) != 0 {
			t.Fatalf("v2 annotations %v", v2.Annotations)
		}
	})

	t.Run("v2 create reads as v1 with what v1 cannot say in annotations", func(t *testing.T) {
		window := int32(30)
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: metav1.ObjectMeta{Name: "mem", Annotations: map[string]string{"team": "a"}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "mem"},
				MaxReplicas:    3,
				Metrics: []autoscalingv2.MetricSpec{
					{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(64<<20, resource.BinarySI)}}},
					{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}},
				},
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window}},
			},
		}
		h.mustDo(http.StatusCreated, "POST", v2Path, "", hpa, nil)
		var v1 autoscalingv1.HorizontalPodAutoscaler
		h.mustDo(http.StatusOK, "GET", v1Path+"/mem", "", nil, &v1)
		if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 70 || v1.Spec.MaxReplicas != 3 {
			t.Fatalf("v1 spec %+v", v1.Spec)
		}
		if v1.Annotations["team"] != "a" || !strings.Contains(v1.Annotations[scheme.HPAMetricsAnnotation], `"memory"`) ||
			strings.Contains(v1.Annotations[scheme.HPAMetricsAnnotation], `"cpu"`) || !strings.Contains(v1.Annotations[scheme.HPABehaviorAnnotation], `"stabilizationWindowSeconds":30`) {
			t.Fatalf("v1 annotations %v", v1.Annotations)
		}

		// A read-modify-write through v1 keeps the v2-only fields.
		v1.Spec.MaxReplicas = 5
		v1.Labels = map[string]string{"edited": "v1"}
		h.mustDo(http.StatusOK, "PUT", v1Path+"/mem", "", &v1, nil)
		var v2 autoscalingv2.HorizontalPodAutoscaler
		h.mustDo(http.StatusOK, "GET", v2Path+"/mem", "", nil, &v2)
		if v2.Spec.MaxReplicas != 5 || v2.Labels["edited"] != "v1" || len(v2.Spec.Metrics) != 2 ||
			v2.Spec.Behavior == nil || *v2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 30 {
			t.Fatalf("v2 after the v1 update: %+v", v2.Spec)
		}
		if _, ok := v2.Annotations[scheme.HPAMetricsAnnotation]; ok || v2.Annotations["team"] != "a" {
			t.Fatalf("v2 annotations %v", v2.Annotations)
		}

		// A merge patch through v1 changes the v1 field and keeps the memory metric.
		h.mustDo(http.StatusOK, "PATCH", v1Path+"/mem", "application/merge-patch+json", `{"spec":{"targetCPUUtilizationPercentage":40}}`, nil)
		h.mustDo(http.StatusOK, "GET", v2Path+"/mem", "", nil, &v2)
		if len(v2.Spec.Metrics) != 2 || v2.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 40 ||
			v2.Spec.Metrics[1].Resource.Name != corev1.ResourceMemory {
			t.Fatalf("v2 metrics after the v1 patch: %+v", v2.Spec.Metrics)
		}
	})

	t.Run("v2 status reads as v1", func(t *testing.T) {
		var v2 autoscalingv2.HorizontalPodAutoscaler
		h.mustDo(http.StatusOK, "GET", v2Path+"/web", "", nil, &v2)
		v2.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(87))}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"}},
		}
		h.mustDo(http.StatusOK, "PUT", v2Path+"/web/status", "", &v2, nil)
		var v1 autoscalingv1.HorizontalPodAutoscaler
		h.mustDo(http.StatusOK, "GET", v1Path+"/web/status", "", nil, &v1)
		if v1.Status.CurrentCPUUtilizationPercentage == nil || *v1.Status.CurrentCPUUtilizationPercentage != 87 || v1.Status.DesiredReplicas != 3 {
			t.Fatalf("v1 status %+v", v1.Status)
		}
		if !strings.Contains(v1.Annotations[scheme.HPAConditionsAnnotation], "SucceededRescale") {
			t.Fatalf("v1 annotations %v", v1.Annotations)
		}
		var list autoscalingv1.HorizontalPodAutoscalerList
		h.mustDo(http.StatusOK, "GET", v1Path, "", nil, &list)
		if list.APIVersion != "autoscaling/v1" || list.Kind != "HorizontalPodAutoscalerList" || len(list.Items) != 2 || list.ResourceVersion == "" {
			t.Fatalf("v1 list %s %s of %d at %q", list.APIVersion, list.Kind, len(list.Items), list.ResourceVersion)
		}
	})

	t.Run("watch in v1", func(t *testing.T) {
		seen := map[string]bool{}
		for len(seen) < 2 {
			ev := next(t, events, true)
			var got autoscalingv1.HorizontalPodAutoscaler
			if err := decodeJSON(ev.Object, &got); err != nil {
				t.Fatal(err)
			}
			if got.APIVersion != "autoscaling/v1" || got.Spec.MaxReplicas == 0 {
				t.Fatalf("%s event of %s: %s", ev.Type, got.APIVersion, ev.Object)
			}
			if _, ok := got.Annotations[scheme.HPAMetricsAnnotation]; got.Name == "mem" && !ok {
				t.Fatalf("mem without its metrics annotation: %s", ev.Object)
			}
			seen[got.Name] = true
		}
	})

	t.Run("bad annotation is invalid with its path", func(t *testing.T) {
		var st metav1.Status
		code, _ := h.do("POST", v1Path, "", map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"name": "bad", "annotations": map[string]any{scheme.HPAMetricsAnnotation: "[{"}},
			"spec":     map[string]any{"scaleTargetRef": map[string]any{"kind": "Deployment", "name": "web"}, "maxReplicas": 2},
		}, &st)
		if code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "metadata.annotations["+scheme.HPAMetricsAnnotation+"]") {
			t.Fatalf("%d %s", code, st.Message)
		}
		if code, _ := h.do("GET", v2Path+"/bad", "", nil, nil); code != http.StatusNotFound {
			t.Fatalf("the bad HPA was written: %d", code)
		}
	})

	t.Run("discovery lists both versions, v2 preferred", func(t *testing.T) {
		var g metav1.APIGroup
		h.mustDo(http.StatusOK, "GET", "/apis/autoscaling", "", nil, &g)
		if len(g.Versions) != 2 || g.Versions[0].Version != "v2" || g.Versions[1].Version != "v1" || g.PreferredVersion.Version != "v2" {
			t.Fatalf("autoscaling group %+v", g)
		}
		var rl metav1.APIResourceList
		h.mustDo(http.StatusOK, "GET", "/apis/autoscaling/v1", "", nil, &rl)
		names := map[string]bool{}
		for _, r := range rl.APIResources {
			names[r.Name] = true
		}
		if !names["horizontalpodautoscalers"] || !names["horizontalpodautoscalers/status"] {
			t.Fatalf("autoscaling/v1 resources %+v", rl.APIResources)
		}
		var tbl metav1.Table
		h.mustDo(http.StatusOK, "GET", v1Path, "", nil, nil)
		code, _ := h.do("GET", v1Path, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if code != http.StatusOK || len(tbl.Rows) != 2 || len(tbl.ColumnDefinitions) < 3 || tbl.ColumnDefinitions[1].Name != "Reference" {
			t.Fatalf("v1 table %d: %+v", code, tbl.ColumnDefinitions)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func decodeJSON(data []byte, into any) error { return json.Unmarshal(data, into) }
