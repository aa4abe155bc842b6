package schedsuite

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mclient "minik8s.io/shared/client"
)

// workload names what the deployments suite measures against direct creation: a Deployment,
// or a StatefulSet of the pod management policy cfg.StatefulSet names.
func (cfg DeployConfig) workload() string {
	if cfg.StatefulSet != "" {
		return "StatefulSet (" + cfg.StatefulSet + ")"
	}
	return "Deployment"
}

// statefulSetPods creates one StatefulSet of cfg.Replicas (policy cfg.StatefulSet, no
// claims) and returns the time to its last pod Ready, to the last pod seen created, and to
// its status showing them all available.
func statefulSetPods(ctx context.Context, api *mclient.Client, cfg DeployConfig, ns string) (ready, created, available time.Duration, cost DeployCost, err error) {
	if err := benchNamespace(ctx, api, ns); err != nil {
		return 0, 0, 0, cost, err
	}
	allCreated, finish := cfg.probeStart(ctx, ns)
	rw, err := watchReady(ctx, api, ns, cfg.Replicas, allCreated)
	if err != nil {
		return 0, 0, 0, cost, err
	}
	sets := mclient.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](api)
	tmpl := cfg.pod("")
	n := int32(cfg.Replicas)
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &n, ServiceName: "bench", PodManagementPolicy: appsv1.PodManagementPolicyType(cfg.StatefulSet),
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		},
	}
	sw, err := sets.Watch(ctx, ns, metav1.ListOptions{})
	if err != nil {
		return 0, 0, 0, cost, err
	}
	defer sw.Stop()
	start := time.Now()
	if _, err := sets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return 0, 0, 0, cost, fmt.Errorf("create statefulset: %w", err)
	}
	last, made, err := rw.wait(ctx)
	if err != nil {
		return 0, 0, 0, cost, err
	}
	for ev := range sw.ResultChan() {
		if got, ok := ev.Object.(*appsv1.StatefulSet); ok && got.Status.AvailableReplicas == n && got.Status.ObservedGeneration >= got.Generation {
			available := time.Since(start)
			return last.Sub(start), made.Sub(start), available, finish(), nil
		}
	}
	return 0, 0, 0, cost, errors.New("statefulset watch ended before every replica was available")
}
