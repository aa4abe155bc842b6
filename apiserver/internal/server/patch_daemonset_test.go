package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/scheme"
)

// TestStrategicReplaceTemplate applies what kubectl rollout undo sends for a DaemonSet: a
// ControllerRevision's data, whose "$patch": "replace" swaps the whole template for the
// revision's, dropping what the current one has and the old one had not.
func TestStrategicReplaceTemplate(t *testing.T) {
	res, ok := scheme.ByGVK(appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
	if !ok {
		t.Fatal("daemonsets are not in the scheme")
	}
	cur := appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}, Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "c", Image: "v2", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}},
				{Name: "sidecar", Image: "s"},
			}},
		}},
	}
	current, _ := json.Marshal(cur)
	patch := []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"c","image":"v1"}]}}}}`)
	out, err := applyPatch(res, types.StrategicMergePatchType, current, patch)
	if err != nil {
		t.Fatal(err)
	}
	var got appsv1.DaemonSet
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v1"}}},
	}
	if diff := cmp.Diff(want, got.Spec.Template); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}
}
