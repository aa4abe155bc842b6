package imageref

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"busybox": corev1.PullAlways, "busybox:latest": corev1.PullAlways, "busybox:1.36": corev1.PullIfNotPresent,
		"localhost:5000/echo": corev1.PullAlways, "localhost:5000/echo:v1": corev1.PullIfNotPresent,
		"echo@sha256:abcd": corev1.PullIfNotPresent,
	} {
		t.Run(image, func(t *testing.T) {
			if got := PullPolicy(image); got != want {
				t.Errorf("PullPolicy(%q) = %s, want %s", image, got, want)
			}
		})
	}
}
