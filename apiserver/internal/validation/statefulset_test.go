package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/defaults"
)

func newStatefulSet() *appsv1.StatefulSet {
	l := map[string]string{"app": "web"}
	s := &appsv1.StatefulSet{ObjectMeta: meta("web"), Spec: appsv1.StatefulSetSpec{
		ServiceName:          "nginx",
		Selector:             &metav1.LabelSelector{MatchLabels: l},
		Template:             template(l),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}},
	}}
	c := &s.Spec.Template.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "www", MountPath: "/usr/share/nginx/html"})
	return s
}

func TestStatefulSet(t *testing.T) {
	runCreate(t, StatefulSet, defaults.StatefulSet, newStatefulSet, []createCase[*appsv1.StatefulSet]{
		{name: "valid, mounting a claim template"},
		{name: "selector mismatch", mutate: func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "other"} },
			want: []problem{inv("spec.template.metadata.labels")}},
		{name: "selector required", mutate: func(s *appsv1.StatefulSet) { s.Spec.Selector = nil },
			// As upstream: a missing selector matches nothing, so the labels do not match either.
			want: []problem{req("spec.selector"), inv("spec.template.metadata.labels")}},
		{name: "negative replicas", mutate: func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr(int32(-1)) }, want: []problem{inv("spec.replicas")}},
		{name: "bad pod management policy", mutate: func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" },
			want: []problem{inv("spec.podManagementPolicy")}},
		{name: "bad update strategy", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: "Recreate"}
		}, want: []problem{inv("spec.updateStrategy")}},
		{name: "rollingUpdate under OnDelete", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(1))}}
		}, want: []problem{inv("spec.updateStrategy.rollingUpdate")}},
		{name: "negative partition", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(-1))}
		}, want: []problem{inv("spec.updateStrategy.rollingUpdate.partition")}},
		{name: "bad retention policy", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "Delete"}
		}, want: []problem{nsup("spec.persistentVolumeClaimRetentionPolicy.whenDeleted")}},
		{name: "restart policy Always only", mutate: func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []problem{nsup("spec.template.spec.restartPolicy")}},
		{name: "no activeDeadlineSeconds", mutate: func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr(int64(5)) },
			want: []problem{forb("spec.template.spec.activeDeadlineSeconds")}},
		{name: "mount of neither a volume nor a claim", mutate: func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates = nil },
			want: []problem{nf("spec.template.spec.containers[0].volumeMounts[0].name")}},
	})
	runUpdate(t, StatefulSet, defaults.StatefulSet, newStatefulSet, []updateCase[*appsv1.StatefulSet]{
		{name: "replicas, template, strategy mutable", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr(int32(5))
			s.Spec.Template.Spec.Containers[0].Image = "other"
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr(int32(2))
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
		}},
		{name: "serviceName immutable", mutate: func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }, want: []problem{forb("spec")}},
		{name: "claim templates immutable", mutate: func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Labels = map[string]string{"x": "y"} }, want: []problem{forb("spec")}},
	})
}
