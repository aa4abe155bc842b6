package app

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/shared/workqueue/clock"
)

// TestSandboxID finds the running sandbox of a pod among its exited one, its app container,
// another pod's sandbox and another node's.
func TestSandboxID(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	rt := fake.New(clk)
	rt.AddImage(spec.DefaultSandboxImage)
	rt.AddImage("app")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	}
	start := func(cfg runtime.ContainerConfig) string {
		t.Helper()
		clk.Step(time.Second)
		id, err := rt.Create(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	n1, n2 := spec.Builder{NodeName: "n1"}, spec.Builder{NodeName: "n2"}
	old := start(n1.Sandbox(pod("web"), 0))
	if err := rt.Exit(old, 0, false); err != nil {
		t.Fatal(err)
	}
	current := start(n1.Sandbox(pod("web"), 1))
	appCfg, err := n1.Container(t.Context(), pod("web"), &pod("web").Spec.Containers[0], current, 0, spec.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start(appCfg)
	start(n1.Sandbox(pod("db"), 0))
	start(n2.Sandbox(pod("api"), 0))

	idx := containerIndex{rt: rt, node: "n1"}
	for _, tc := range []struct {
		pod     string
		want    string
		wantErr error
	}{
		{"web", current, nil},
		{"api", "", runtime.ErrNotFound}, // another node's
		{"absent", "", runtime.ErrNotFound},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			got, err := idx.SandboxID(t.Context(), "default", tc.pod)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("SandboxID(default/%s) = %q, %v; want %q, %v", tc.pod, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
