package rootcacert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func published(ns string, mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-root-ca.crt", Annotations: map[string]string{
			"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
		}},
		Data: map[string]string{"ca.crt": ca},
	}
	for _, m := range mutate {
		m(cm)
	}
	return cm
}

func TestDecide(t *testing.T) {
	deleting := namespace("old", corev1.NamespaceActive)
	deleting.DeletionTimestamp = &metav1.Time{}
	cases := []struct {
		name    string
		ns      *corev1.Namespace
		current *corev1.ConfigMap
		want    Plan
	}{
		{name: "new namespace", ns: namespace("dev", corev1.NamespaceActive), want: Plan{Create: published("dev")}},
		{name: "namespace without a phase yet", ns: namespace("dev", ""), want: Plan{Create: published("dev")}},
		{name: "published", ns: namespace("dev", corev1.NamespaceActive), current: published("dev")},
		{name: "namespace gone", current: published("dev")},
		{name: "terminating", ns: namespace("old", corev1.NamespaceTerminating)},
		{name: "deleted, not yet terminating", ns: deleting},
		{name: "data changed", ns: namespace("dev", corev1.NamespaceActive),
			current: published("dev", func(cm *corev1.ConfigMap) { cm.Data["ca.crt"] = "forged" }),
			want:    Plan{Update: published("dev")}},
		{name: "a key added", ns: namespace("dev", corev1.NamespaceActive),
			current: published("dev", func(cm *corev1.ConfigMap) { cm.Data["extra"] = "x" }),
			want:    Plan{Update: published("dev")}},
		{name: "description lost, user's labels and annotations kept", ns: namespace("dev", corev1.NamespaceActive),
			current: published("dev", func(cm *corev1.ConfigMap) {
				cm.Annotations = map[string]string{"team": "a"}
				cm.Labels = map[string]string{"l": "v"}
			}),
			want: Plan{Update: published("dev", func(cm *corev1.ConfigMap) {
				cm.Annotations["team"] = "a"
				cm.Labels = map[string]string{"l": "v"}
			})}},
		{name: "another description stays", ns: namespace("dev", corev1.NamespaceActive),
			current: published("dev", func(cm *corev1.ConfigMap) { cm.Annotations["kubernetes.io/description"] = "ours" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.ConfigMap
			if tc.current != nil {
				before = tc.current.DeepCopy()
			}
			got := Decide(tc.ns, tc.current, []byte(ca))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.current); diff != "" {
				t.Errorf("the cached configmap changed (-before +after):\n%s", diff)
			}
		})
	}
}
