package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cpuHPA(minR, maxR int32, target int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minR, MaxReplicas: maxR, Behavior: b,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}},
		},
	}
}

// sim plays a target whose pods share a total CPU load (millicores) evenly, ready at once,
// and runs Decide every 15 s as the controller's resync does, applying its rescales.
type sim struct {
	t       *testing.T
	hpa     *autoscalingv2.HorizontalPodAutoscaler
	h       History
	now     time.Time
	current int32
	sizes   []int32 // replica count after each step
}

func (s *sim) step(totalLoad int64) Decision {
	pods := makePods(s.now, ready(int(s.current))...)
	m := PodMetrics{}
	for _, p := range pods {
		m[p.Name] = PodMetric{Value: totalLoad / int64(s.current), Timestamp: s.now.Add(-5 * time.Second), Window: 15 * time.Second}
	}
	d := Decide(Input{HPA: s.hpa, Current: s.current, Pods: pods, Metrics: map[corev1.ResourceName]PodMetrics{corev1.ResourceCPU: m}, Now: s.now}, &s.h)
	if d.Rescale {
		s.h.Record(withDefaults(s.hpa.Spec.Behavior), s.current, d.Desired, s.now)
		s.current = d.Desired
	}
	s.hpa.Status = d.Status
	s.sizes = append(s.sizes, s.current)
	s.now = s.now.Add(15 * time.Second)
	return d
}

func (s *sim) run(load int64, steps int) {
	for range steps {
		s.step(load)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func TestDecideSequences(t *testing.T) {
	sel := func(p autoscalingv2.ScalingPolicySelect) *autoscalingv2.ScalingPolicySelect { return &p }
	for _, c := range []struct {
		name  string
		hpa   *autoscalingv2.HorizontalPodAutoscaler
		start int32
		loads []int64 // total millicores per step (1 core requested per pod, target 50%)
		want  []int32
	}{
		{
			// 1 -> 5 (4 pods beat 100%) -> 10 (100% beats 4 pods) -> 20 -> capped at 30.
			name: "default scale-up rate: the larger of 4 pods and 100% per 15 s, to max",
			hpa:  cpuHPA(1, 30, 50, nil), start: 1,
			loads: []int64{100000, 100000, 100000, 100000, 100000},
			want:  []int32{5, 10, 20, 30, 30},
		},
		{
			// The load drops at once; the default 300 s window keeps the highest
			// recommendation (10, from the first sample) until it has passed.
			name: "default scale-down waits for the 300 s stabilization window",
			hpa:  cpuHPA(1, 30, 50, nil), start: 10,
			loads: append(repeat(500, 21), 500),
			want:  append(repeat32(10, 20), 1, 1),
		},
		{
			name: "flapping load is held at the highest recent recommendation",
			hpa: cpuHPA(1, 30, 50, &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr(int32(60))}}), start: 4,
			// 2 cores (4 pods at 50%) and 0.5 core (1 pod) alternating, then low for good:
			// the last high recommendation (t=75 s) leaves the 60 s window at t=135 s.
			loads: []int64{500, 2000, 500, 2000, 500, 2000, 500, 500, 500, 500, 500, 500},
			want:  []int32{4, 4, 4, 4, 4, 4, 4, 4, 4, 1, 1, 1},
		},
		{
			name: "scale-down policy of 1 pod per 60 s",
			hpa: cpuHPA(1, 30, 50, &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr(int32(0)), Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}),
			start: 10, loads: repeat(100, 9),
			want: []int32{9, 9, 9, 9, 8, 8, 8, 8, 7},
		},
		{
			// min(10+4, 10*2) = 14, then min(14+4, 28) = 18.
			name: "selectPolicy Min picks the smaller step",
			hpa: cpuHPA(1, 100, 50, &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				SelectPolicy: sel(autoscalingv2.MinChangePolicySelect)}}),
			start: 10, loads: []int64{50000, 50000},
			want: []int32{14, 18},
		},
		{
			name: "scale-down Disabled never removes pods",
			hpa: cpuHPA(1, 30, 50, &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				SelectPolicy: sel(autoscalingv2.DisabledPolicySelect), StabilizationWindowSeconds: ptr(int32(0))}}),
			start: 6, loads: repeat(100, 4), want: repeat32(6, 4),
		},
		{
			name: "a scale-up stabilization window waits for a steady rise",
			hpa: cpuHPA(1, 30, 50, &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr(int32(30))}}),
			// High from t=15 s: at t=30 s every recommendation in the window says 8, and the
			// default rate allows 2+4 first.
			start: 2, loads: []int64{1000, 4000, 4000, 4000, 4000},
			want: []int32{2, 2, 6, 8, 8},
		},
		{
			name: "below minReplicas goes to min at once",
			hpa:  cpuHPA(3, 10, 50, nil), start: 1, loads: []int64{0, 0},
			want: []int32{3, 3},
		},
		{
			name: "above maxReplicas goes to max at once",
			hpa:  cpuHPA(1, 4, 50, nil), start: 9, loads: []int64{9000},
			want: []int32{4},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &sim{t: t, hpa: c.hpa, now: t0, current: c.start}
			for _, l := range c.loads {
				s.step(l)
			}
			if !equal(s.sizes, c.want) {
				t.Errorf("sizes:\n got  %v\n want %v", s.sizes, c.want)
			}
		})
	}
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func repeat32(v int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func condOf(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

func TestDecideStatus(t *testing.T) {
	t.Run("a limited scale-up", func(t *testing.T) {
		s := &sim{t: t, hpa: cpuHPA(1, 10, 50, nil), now: t0, current: 2}
		d := s.step(20000) // 10 cores over 2 pods: 1000% of request
		if !d.Rescale || d.Desired != 6 || d.Reason != "cpu resource utilization (percentage of request) above target" {
			t.Fatalf("want a rescale to 6 for cpu above target, got %+v", d)
		}
		st := d.Status
		if st.CurrentReplicas != 2 || st.DesiredReplicas != 6 || len(st.CurrentMetrics) != 1 ||
			*st.CurrentMetrics[0].Resource.Current.AverageUtilization != 1000 || st.CurrentMetrics[0].Resource.Current.AverageValue.String() != "10" {
			t.Errorf("status: %+v", st)
		}
		for typ, want := range map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
			autoscalingv2.AbleToScale: "True/ReadyForNewScale", autoscalingv2.ScalingActive: "True/ValidMetricFound",
			autoscalingv2.ScalingLimited: "True/ScaleUpLimit"} {
			if c := condOf(st, typ); string(c.Status)+"/"+c.Reason != want {
				t.Errorf("%s: want %s, got %+v", typ, want, c)
			}
		}
		first := condOf(st, autoscalingv2.ScalingLimited).LastTransitionTime
		d = s.step(20000)
		if c := condOf(d.Status, autoscalingv2.ScalingLimited); c.Reason != "TooManyReplicas" || !c.LastTransitionTime.Equal(&first) {
			t.Errorf("limited by max now, same transition time: %+v", c)
		}
	})
	t.Run("metrics unavailable", func(t *testing.T) {
		hpa := cpuHPA(1, 10, 50, nil)
		var h History
		d := Decide(Input{HPA: hpa, Current: 3, Pods: makePods(t0, ready(3)...),
			MetricErrors: map[corev1.ResourceName]error{corev1.ResourceCPU: errString("the server is currently unable to handle the request")}, Now: t0}, &h)
		if d.Rescale || d.Desired != 3 || len(d.Warnings) != 2 || d.Warnings[0].Reason != ReasonFailedGetResource {
			t.Fatalf("want no rescale and warnings, got %+v", d)
		}
		if c := condOf(d.Status, autoscalingv2.ScalingActive); c.Status != corev1.ConditionFalse || c.Reason != ReasonFailedGetResource {
			t.Errorf("ScalingActive: %+v", c)
		}
	})
	t.Run("target scaled to zero", func(t *testing.T) {
		var h History
		d := Decide(Input{HPA: cpuHPA(1, 10, 50, nil), Current: 0, Now: t0}, &h)
		if d.Rescale || condOf(d.Status, autoscalingv2.ScalingActive).Reason != ReasonScalingDisabled {
			t.Errorf("want scaling disabled, got %+v", d)
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }
