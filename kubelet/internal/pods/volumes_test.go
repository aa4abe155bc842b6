package pods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// tokenLog hands out a new token, t1, t2..., on every request, and records the pods whose
// tokens were dropped.
type tokenLog struct {
	mu      sync.Mutex
	n       int
	deleted []types.UID
}

func (l *tokenLog) GetServiceAccountToken(_ context.Context, _, _ string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("t%d", l.n)
	return out, nil
}

func (l *tokenLog) DeleteServiceAccountToken(pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted = append(l.deleted, pod)
}

func (l *tokenLog) requests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *tokenLog) dropped() []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]types.UID(nil), l.deleted...)
}

func TestProjectedTokenRefreshedWhileRunningAndDroppedWithPod(t *testing.T) {
	tokens := &tokenLog{}
	h := newHarnessWith(t, func(c *Config) { c.Tokens = tokens })
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	h.m.Update(pod)
	h.settle("running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })

	app, ok := h.creates.last("k8s_app_")
	if !ok || len(app.Mounts) == 0 {
		t.Fatalf("app container created with mounts %v", app.Mounts)
	}
	tokenFile := filepath.Join(app.Mounts[0].HostPath, "token")
	read := func() string { b, _ := os.ReadFile(tokenFile); return string(b) }
	if got := read(); got != "t1" {
		t.Fatalf("token at start = %q, want t1", got)
	}

	// Resyncs within the refresh period ask for nothing.
	h.clk.Step(30 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := tokens.requests(); n != 1 {
		t.Errorf("%d token requests 30s after start, want 1", n)
	}
	h.eventually("token rewritten", func() bool { return read() == "t2" })

	h.m.Remove(pod.UID)
	h.settle("tokens dropped", func() bool { return len(tokens.dropped()) == 1 })
	if got := tokens.dropped(); got[0] != pod.UID {
		t.Errorf("tokens dropped for %v, want %s", got, pod.UID)
	}
}
