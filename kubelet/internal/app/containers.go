package app

import (
	"context"
	"fmt"
	"sort"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/server"
)

// containerIndex finds pods' containers by the labels the kubelet gives them.
type containerIndex struct {
	rt   runtime.Runtime
	node string
}

// ContainerID returns the newest container of that name in the pod, or with previous the one
// before it (the last instance that terminated), as `kubectl logs [--previous]` means.
func (c containerIndex) ContainerID(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
	list, err := c.rt.List(ctx, map[string]string{
		spec.LabelPodNamespace: namespace, spec.LabelPodName: pod, spec.LabelContainerName: container,
		spec.LabelNode: c.node,
	})
	if err != nil {
		return "", err
	}
	var mine []runtime.Container
	for _, ct := range list {
		if info, ok := spec.Parse(ct.Labels); ok && !info.Sandbox {
			mine = append(mine, ct)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].CreatedAt.After(mine[j].CreatedAt) })
	i := 0
	if previous {
		i = 1
	}
	if i >= len(mine) {
		return "", fmt.Errorf("container %s of pod %s/%s: %w", container, namespace, pod, runtime.ErrNotFound)
	}
	return mine[i].ID, nil
}

// SandboxID returns the newest running sandbox of the pod: a pod being recreated may briefly
// have an exited one beside it.
func (c containerIndex) SandboxID(ctx context.Context, namespace, pod string) (string, error) {
	list, err := c.rt.List(ctx, map[string]string{
		spec.LabelPodNamespace: namespace, spec.LabelPodName: pod, spec.LabelNode: c.node,
	})
	if err != nil {
		return "", err
	}
	var newest *runtime.Container
	for i, ct := range list {
		if info, ok := spec.Parse(ct.Labels); !ok || !info.Sandbox || ct.State != runtime.StateRunning {
			continue
		}
		if newest == nil || ct.CreatedAt.After(newest.CreatedAt) {
			newest = &list[i]
		}
	}
	if newest == nil {
		return "", fmt.Errorf("sandbox of pod %s/%s: %w", namespace, pod, runtime.ErrNotFound)
	}
	return newest.ID, nil
}

// PodContainers lists the running app containers of every pod.
func (c containerIndex) PodContainers(ctx context.Context) ([]server.PodRef, error) {
	list, err := c.rt.List(ctx, map[string]string{spec.LabelNode: c.node})
	if err != nil {
		return nil, err
	}
	byUID := map[string]*server.PodRef{}
	var order []string
	for _, ct := range list {
		info, ok := spec.Parse(ct.Labels)
		if !ok || info.Sandbox || ct.State != runtime.StateRunning {
			continue
		}
		ref, ok := byUID[info.PodUID]
		if !ok {
			ref = &server.PodRef{Namespace: info.Namespace, Name: info.PodName, UID: info.PodUID, Containers: map[string]string{}}
			byUID[info.PodUID] = ref
			order = append(order, info.PodUID)
		}
		ref.Containers[info.Container] = ct.ID
	}
	out := make([]server.PodRef, 0, len(order))
	for _, uid := range order {
		out = append(out, *byUID[uid])
	}
	return out, nil
}

// usageSource feeds the node usage reporter from the same sampling as /stats/summary.
type usageSource struct{ srv *server.Server }

func (u usageSource) ContainerUsage(ctx context.Context) ([]nodestatus.ContainerUsage, error) {
	samples, err := u.srv.ContainerSamples(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]nodestatus.ContainerUsage, 0, len(samples))
	for _, s := range samples {
		out = append(out, nodestatus.ContainerUsage{ID: s.ID, CPUNanos: s.Stats.CPUUsageNanos,
			MemoryBytes: s.Stats.MemoryWorkingSetBytes, Time: s.Stats.Timestamp})
	}
	return out, nil
}
