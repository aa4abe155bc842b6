package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestResourceQuotaController runs the resourcequota controller against a real apiserver and
// RabbitMQ: it measures a new quota, admission raises the usage as pods and configmaps are
// created and refuses what exceeds it, and the controller lowers it when a pod finishes or
// objects are deleted.
func TestResourceQuotaController(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 5 * time.Minute, Identity: "cm-quota",
		Controllers:            []string{"resourcequota"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	ctx := t.Context()
	const ns = "default"
	quotas := client.MustFor[*corev1.ResourceQuota, *corev1.ResourceQuotaList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	configmaps := client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](admin)

	_, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"pods": resource.MustParse("2"), "count/pods": resource.MustParse("5"), "requests.memory": resource.MustParse("1Gi"),
			"count/configmaps": resource.MustParse("10"),
		}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := func(ctx context.Context) (map[string]string, error) {
		q, err := quotas.Get(ctx, ns, "q", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for k, v := range q.Status.Used {
			out[string(k)] = v.String()
		}
		return out, nil
	}
	waitUsed := func(what string, want map[string]string) {
		t.Helper()
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			got, err := used(ctx)
			for k, v := range want {
				if got[k] != v {
					return false, err
				}
			}
			return err == nil, err
		})
	}
	// The apiserver's own ConfigMap (kube-root-ca.crt) and nothing else is in the namespace.
	existing, err := configmaps.List(ctx, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitUsed("the new quota measured", map[string]string{"pods": "0", "count/pods": "0", "requests.memory": "0",
		"count/configmaps": resource.NewQuantity(int64(len(existing.Items)), resource.DecimalSI).String()})

	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "minik8s/busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"memory": resource.MustParse("256Mi")}}}}}}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, pod(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	if got, err := used(ctx); err != nil || got["pods"] != "2" || got["requests.memory"] != "512Mi" {
		t.Fatalf("admission charged %v (%v), want pods 2 and 512Mi", got, err)
	}
	_, err = pods.Create(ctx, pod("c"), metav1.CreateOptions{})
	if !errors.Is(err, apierror.ErrForbidden) || !strings.Contains(err.Error(), "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2") {
		t.Fatalf("third pod: %v", err)
	}

	// A finished pod frees its share of pods and memory, not of count/pods.
	a, err := pods.Get(ctx, ns, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("a finished pod freed", map[string]string{"pods": "1", "requests.memory": "256Mi", "count/pods": "2"})
	if _, err := pods.Create(ctx, pod("c"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod after one finished: %v", err)
	}

	// Deleting frees the rest.
	for _, name := range []string{"a", "b", "c"} {
		if err := pods.Delete(ctx, ns, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitUsed("deleted pods freed", map[string]string{"pods": "0", "requests.memory": "0", "count/pods": "0"})

	if _, err := configmaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := len(existing.Items)
	waitUsed("a configmap counted", map[string]string{"count/configmaps": resource.NewQuantity(int64(n+1), resource.DecimalSI).String()})
	if err := configmaps.Delete(ctx, ns, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("a deleted configmap freed", map[string]string{"count/configmaps": resource.NewQuantity(int64(n), resource.DecimalSI).String()})

	// A raised limit reaches status.hard.
	q, err := quotas.Get(ctx, ns, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["pods"] = resource.MustParse("7")
	if _, err := quotas.Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "status.hard follows the spec", func(ctx context.Context) (bool, error) {
		q, err := quotas.Get(ctx, ns, "q", metav1.GetOptions{})
		return err == nil && q.Status.Hard.Pods().Value() == 7, err
	})
}
