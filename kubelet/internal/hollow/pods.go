package hollow

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
)

// boundSelector lists every bound pod: a field selector cannot name thousands of nodes, so
// pods of other nodes are filtered out here.
const boundSelector = "spec.nodeName!="

// podLoop lists and watches bound pods and hands ours to Workers writers. A failed watch is
// resumed from the last resourceVersion, or relisted when that is gone.
func (h *Hollow) podLoop(ctx context.Context) {
	work := make(chan *corev1.Pod, 1024)
	done := make(chan struct{})
	for range h.cfg.Workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for p := range work {
				h.playPod(ctx, p)
			}
		}()
	}
	defer func() {
		close(work)
		for range h.cfg.Workers {
			<-done
		}
	}()
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			list, err := h.api.Pods.List(ctx, "", metav1.ListOptions{FieldSelector: boundSelector})
			if err != nil {
				h.log.Warn("listing pods", "err", err)
				h.pause(ctx, time.Second)
				continue
			}
			for i := range list.Items {
				h.offer(ctx, work, &list.Items[i])
			}
			rv = list.ResourceVersion
		}
		rv = h.watchPods(ctx, work, rv)
	}
}

// watchPods follows one watch and returns the resourceVersion to resume from ("" to relist).
func (h *Hollow) watchPods(ctx context.Context, work chan<- *corev1.Pod, rv string) string {
	w, err := h.api.Pods.Watch(ctx, "", metav1.ListOptions{FieldSelector: boundSelector, ResourceVersion: rv,
		AllowWatchBookmarks: true})
	if err != nil {
		if errors.Is(err, apierror.ErrGone) {
			return ""
		}
		h.log.Warn("watching pods", "err", err)
		h.pause(ctx, time.Second)
		return rv
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				return ""
			case watch.Added, watch.Modified, watch.Bookmark:
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if ev.Type != watch.Bookmark {
					h.offer(ctx, work, p)
				}
			case watch.Deleted:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					rv = p.ResourceVersion
				}
			}
		}
	}
}

// offer queues pod when it is ours and needs something: a Running report or its final delete.
func (h *Hollow) offer(ctx context.Context, work chan<- *corev1.Pod, p *corev1.Pod) {
	if !h.owns(p.Spec.NodeName) {
		return
	}
	if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
		return
	}
	select {
	case work <- p:
	case <-ctx.Done():
	}
}

// playPod does what a kubelet would with no containers to run: a pod being deleted is
// finalized at once, any other is reported Running and Ready.
func (h *Hollow) playPod(ctx context.Context, p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		zero := int64(0)
		err := h.api.Pods.Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) && !errors.Is(err, apierror.ErrConflict) && ctx.Err() == nil {
			h.log.Warn("finalizing pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		return
	}
	now := metav1.NewTime(h.clk.Now())
	next := p.DeepCopy()
	next.Status.Phase = corev1.PodRunning
	next.Status.HostIP = "127.0.0.1"
	next.Status.StartTime = &now
	next.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady} {
		next.Status.Conditions = append(next.Status.Conditions,
			corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	next.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		next.Status.ContainerStatuses = append(next.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptrTrue(),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	_, err := h.api.Pods.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	// A conflict means a newer pod is on its way through the watch, which offers it again.
	if err != nil && !errors.Is(err, apierror.ErrConflict) && !errors.Is(err, apierror.ErrNotFound) && ctx.Err() == nil {
		h.log.Warn("reporting pod running", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
}

func ptrTrue() *bool { b := true; return &b }

func (h *Hollow) pause(ctx context.Context, d time.Duration) {
	t := h.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
