package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/apiserver/internal/defaults"
)

func TestDeploymentCreate(t *testing.T) {
	runCreate(t, Deployment, defaults.Deployment, newDeployment, []createCase[*appsv1.Deployment]{
		{name: "valid"},
		{name: "negative replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(-1)) }, want: []problem{inv("spec.replicas")}},
		{name: "selector required", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil }, want: []problem{req("spec.selector")}},
		{name: "empty selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, want: []problem{inv("spec.selector")}},
		{name: "selector does not match", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} },
			want: []problem{inv("spec.template.metadata.labels")}},
		{name: "restart policy only Always", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []problem{nsup("spec.template.spec.restartPolicy")}},
		{name: "template container checked", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			want: []problem{req("spec.template.spec.containers[0].image")}},
		{name: "strategy type", mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, want: []problem{nsup("spec.strategy.type")}},
		{name: "surge and unavailable both zero", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(0)), MaxUnavailable: ptr(intstr.FromString("0%"))}
		}, want: []problem{inv("spec.strategy.rollingUpdate.maxUnavailable")}},
		{name: "bad percent", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromString("lots"))}
		}, want: []problem{inv("spec.strategy.rollingUpdate.maxSurge")}},
		{name: "recreate with rollingUpdate", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, want: []problem{forb("spec.strategy.rollingUpdate")}},
	})
}

func TestDeploymentUpdate(t *testing.T) {
	runUpdate(t, Deployment, defaults.Deployment, newDeployment, []updateCase[*appsv1.Deployment]{
		{name: "scale", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(5)) }},
		{name: "new image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" }},
		{name: "selector immutable", mutate: func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
			d.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
		}, want: []problem{inv("spec.selector")}},
	})
}

func TestReplicaSet(t *testing.T) {
	runCreate(t, ReplicaSet, defaults.ReplicaSet, newReplicaSet, []createCase[*appsv1.ReplicaSet]{
		{name: "valid"},
		{name: "selector mismatch", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = nil }, want: []problem{inv("spec.template.metadata.labels")}},
		{name: "negative replicas", mutate: func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr(int32(-3)) }, want: []problem{inv("spec.replicas")}},
	})
	runUpdate(t, ReplicaSet, defaults.ReplicaSet, newReplicaSet, []updateCase[*appsv1.ReplicaSet]{
		{name: "selector immutable", mutate: func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}
		}, want: []problem{inv("spec.selector")}},
	})
}

func TestJob(t *testing.T) {
	runCreate(t, Job, defaults.Job, newJob, []createCase[*batchv1.Job]{
		{name: "valid"},
		{name: "restart policy required", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }, want: []problem{req("spec.template.spec.restartPolicy")}},
		{name: "restart policy Always", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			want: []problem{nsup("spec.template.spec.restartPolicy")}},
		{name: "negative parallelism", mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr(int32(-1)) }, want: []problem{inv("spec.parallelism")}},
		{name: "negative backoff", mutate: func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr(int32(-1)) }, want: []problem{inv("spec.backoffLimit")}},
		{name: "indexed needs completions", mutate: func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr(int32(2))
		}, want: []problem{req("spec.completions")}},
		{name: "manual selector must match", mutate: func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}, want: []problem{inv("spec.template.metadata.labels")}},
	})
	runUpdate(t, Job, defaults.Job, newJob, []updateCase[*batchv1.Job]{
		{name: "parallelism mutable", mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr(int32(3)) }},
		{name: "template immutable", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "other" }, want: []problem{inv("spec.template")}},
		{name: "selector immutable", mutate: func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/job-name": "pi"}}
		}, want: []problem{inv("spec.selector")}},
	})
}

func TestHPA(t *testing.T) {
	runCreate(t, HorizontalPodAutoscaler, defaults.HorizontalPodAutoscaler, newHPA, []createCase[*autoscalingv2.HorizontalPodAutoscaler]{
		{name: "valid"},
		{name: "kind required", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "" }, want: []problem{req("spec.scaleTargetRef.kind")}},
		{name: "name required", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "" }, want: []problem{req("spec.scaleTargetRef.name")}},
		{name: "min replicas", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr(int32(0)) }, want: []problem{inv("spec.minReplicas")}},
		{name: "max below min", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr(int32(6)) }, want: []problem{inv("spec.maxReplicas")}},
		{name: "metric without source", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType}}
		}, want: []problem{req("spec.metrics[0].resource")}},
		{name: "utilization missing", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}}
		}, want: []problem{req("spec.metrics[0].resource.target.averageUtilization")}},
		{name: "policy period", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 4000}}}}
		}, want: []problem{inv("spec.behavior.scaleUp.policies[0].periodSeconds")}},
	})
}
