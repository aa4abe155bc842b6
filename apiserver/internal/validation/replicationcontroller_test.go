package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/defaults"
)

func newReplicationController() *corev1.ReplicationController {
	return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/busybox:1.0"}}},
		}}}
}

// ReplicationControllers are checked as Kubernetes' ValidateReplicationController checks
// them, after its defaults (the selector taken from the template's labels).
func TestReplicationControllerValidation(t *testing.T) {
	runCreate(t, ReplicationController, defaults.ReplicationController, newReplicationController, []createCase[*corev1.ReplicationController]{
		{name: "valid"},
		{name: "replicas", mutate: func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr(int32(-1)) }, want: []problem{inv("spec.replicas")}},
		{name: "minReadySeconds", mutate: func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -1 }, want: []problem{inv("spec.minReadySeconds")}},
		{name: "selector mismatch", mutate: func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			want: []problem{inv("spec.template.metadata.labels")}},
		{name: "selector required", mutate: func(rc *corev1.ReplicationController) { rc.Spec.Template.Labels = nil },
			want: []problem{req("spec.selector")}},
		{name: "template required", mutate: func(rc *corev1.ReplicationController) {
			rc.Spec.Selector, rc.Spec.Template = map[string]string{"app": "web"}, nil
		}, want: []problem{req("spec.template")}},
		{name: "restart policy", mutate: func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			want: []problem{nsup("spec.template.spec.restartPolicy")}},
		{name: "deadline", mutate: func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptr(int64(5)) },
			want: []problem{inv("spec.template.spec.activeDeadlineSeconds")}},
	})
}

func TestReplicationControllerDefaults(t *testing.T) {
	rc := newReplicationController()
	defaults.ReplicationController(rc)
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || rc.Spec.Replicas == nil || *rc.Spec.Replicas != 1 {
		t.Fatalf("defaulted %+v %+v", rc.ObjectMeta, rc.Spec)
	}
}
