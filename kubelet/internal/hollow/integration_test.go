package hollow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/workqueue/clock"
)

// apiClient connects to the running control plane (make up), like nodestatus' integration test.
func apiClient(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a running apiserver (make up); skipped under -short")
	}
	home := os.Getenv("MINIK8S_HOME")
	if home == "" {
		h, _ := os.UserHomeDir()
		home = filepath.Join(h, ".minik8s")
	}
	cfg, err := client.FromKubeconfig(filepath.Join(home, "kubeconfig"))
	if err != nil {
		t.Fatalf("no admin kubeconfig in %s (%v): run make up, or -short to skip", home, err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Hollow nodes register Ready with a Lease that is renewed, and play the kubelet of the pods
// bound to them: Running, then gone when deleted.
func TestHollowNodesAgainstAPIServer(t *testing.T) {
	c := apiClient(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "hollow-test-" + hex.EncodeToString(b) + "-"
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](c)
	leases := client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](c)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c)
	h := New(Config{Nodes: 2, Prefix: prefix, LeaseInterval: time.Second, Workers: 2},
		API{Nodes: nodes, Leases: leases, Pods: pods}, clock.Real{}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		<-done
		bg := context.Background()
		for i := range 2 {
			_ = nodes.Delete(bg, "", h.NodeName(i), metav1.DeleteOptions{})
			_ = leases.Delete(bg, LeaseNamespace, h.NodeName(i), metav1.DeleteOptions{})
		}
	})
	if err := h.Register(ctx); err != nil {
		done <- nil
		t.Fatal(err)
	}
	go func() { done <- h.Start(ctx) }()

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	n, err := nodes.Get(ctx, "", h.NodeName(1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
	}
	if !ready || n.Status.Allocatable.Pods().Value() == 0 {
		t.Fatalf("hollow node not Ready with allocatable pods: %+v", n.Status)
	}
	first, err := leases.Get(ctx, LeaseNamespace, h.NodeName(1), metav1.GetOptions{})
	if err != nil || first.Spec.RenewTime == nil {
		t.Fatalf("lease: %v %+v", err, first)
	}
	eventually("the lease to be renewed", func() bool {
		l, err := leases.Get(ctx, LeaseNamespace, h.NodeName(1), metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(first.Spec.RenewTime.Time)
	})

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: prefix + "pod", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: h.NodeName(0), Containers: []corev1.Container{{Name: "c", Image: "none:1"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the pod to be reported Running", func() bool {
		p, err := pods.Get(ctx, "default", pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	// Bound pods are deleted gracefully; the hollow kubelet finishes the deletion.
	if err := pods.Delete(ctx, "default", pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the pod to be gone", func() bool {
		_, err := pods.Get(ctx, "default", pod.Name, metav1.GetOptions{})
		return err != nil
	})
}
