package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validDaemonSet() *appsv1.DaemonSet {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	ten := int32(10)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &zero}},
			RevisionHistoryLimit: &ten,
		},
	}
}

func TestDaemonSetValidation(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	tests := []struct {
		name string
		mod  func(*appsv1.DaemonSet)
		want []string // "type field"
	}{
		{"valid", func(*appsv1.DaemonSet) {}, nil},
		{"selector does not match", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "other"} },
			[]string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"empty selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"FieldValueInvalid spec.selector"}},
		{"restartPolicy Never", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{"FieldValueNotSupported spec.template.spec.restartPolicy"}},
		{"activeDeadlineSeconds", func(ds *appsv1.DaemonSet) { v := int64(5); ds.Spec.Template.Spec.ActiveDeadlineSeconds = &v },
			[]string{"FieldValueInvalid spec.template.spec.activeDeadlineSeconds"}},
		{"negative minReadySeconds", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = -1 },
			[]string{"FieldValueInvalid spec.minReadySeconds"}},
		{"unknown strategy", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Sometimes" },
			[]string{"FieldValueNotSupported spec.updateStrategy"}},
		{"rolling without rollingUpdate", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			[]string{"FieldValueRequired spec.updateStrategy.rollingUpdate"}},
		{"OnDelete", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}, nil},
		{"both zero", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = num(0) },
			[]string{"FieldValueRequired spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{"both set", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = num(1) },
			[]string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.maxSurge"}},
		{"surge alone", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = num(0), pct("20%")
		}, nil},
		{"over 100%", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = pct("150%") },
			[]string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{"negative maxUnavailable", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = num(-1) },
			[]string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{"negative revisionHistoryLimit", func(ds *appsv1.DaemonSet) { v := int32(-1); ds.Spec.RevisionHistoryLimit = &v },
			[]string{"FieldValueInvalid spec.revisionHistoryLimit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := validDaemonSet()
			tt.mod(ds)
			var got []string
			for _, e := range DaemonSet.ValidateCreate(ds, true) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("errors %v, want %v", got, tt.want)
				}
			}
		})
	}
	old := validDaemonSet()
	n := validDaemonSet()
	n.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent", "x": "y"}}
	n.Spec.Template.Labels["x"] = "y"
	n.ResourceVersion, old.ResourceVersion = "1", "1"
	errs := DaemonSet.ValidateUpdate(n, old)
	if len(errs) != 1 || errs[0].Field != "spec.selector" {
		t.Errorf("changed selector: %v", errs)
	}
}
