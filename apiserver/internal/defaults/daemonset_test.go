package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDaemonSetDefaultsAndTemplateGeneration(t *testing.T) {
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v1"}}},
	}}, Status: appsv1.DaemonSetStatus{NumberReady: 3}}
	PrepareDaemonSet(ds)
	DaemonSet(ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 ||
		*ds.Spec.RevisionHistoryLimit != 10 || ds.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("defaults: %+v", ds.Spec)
	}
	if ds.Status.NumberReady != 0 || ds.Annotations[TemplateGenerationAnnotation] != "1" {
		t.Errorf("create: status %+v, annotations %v", ds.Status, ds.Annotations)
	}

	same := ds.DeepCopy()
	same.Annotations[TemplateGenerationAnnotation] = "7" // not the client's to set
	KeepDaemonSetTemplateGeneration(same, ds)
	if got := same.Annotations[TemplateGenerationAnnotation]; got != "1" {
		t.Errorf("unchanged template: generation %s, want 1", got)
	}
	changed := ds.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "v2"
	changed.Spec.Template.Spec.RestartPolicy = "" // defaults later: not a change by itself
	KeepDaemonSetTemplateGeneration(changed, ds)
	if got := changed.Annotations[TemplateGenerationAnnotation]; got != "2" {
		t.Errorf("new template: generation %s, want 2", got)
	}
}
