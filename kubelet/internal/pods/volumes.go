package pods

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/pods/spec"
)

// refreshVolumes rewrites a running pod's file volumes once volumeRefreshPeriod has passed
// since they were last written, so renewed tokens and edited ConfigMaps and Secrets reach its
// containers. A failure keeps what the volumes hold and is retried on the next sync.
func (m *Manager) refreshVolumes(ctx context.Context, w *worker, pod *corev1.Pod, env spec.Env, st *syncState) {
	if !m.refreshLater(pod, st) {
		return
	}
	if left := volumeRefreshPeriod - m.cfg.Clock.Since(w.volumesAt); left > 0 {
		st.out.soon(left)
		return
	}
	if err := m.builder.RefreshVolumes(ctx, pod, env); err != nil {
		m.log.Warn("refresh volumes failed", "pod", podRef(pod), "err", err)
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for pod %s: %v", formatPod(pod), err)
		st.out.soon(retryDelay * 10)
		return
	}
	w.volumesAt = m.cfg.Clock.Now()
}

// refreshLater makes sure a pod with file volumes is synced again within
// volumeRefreshPeriod, whatever the resync period, and reports whether it has any.
func (m *Manager) refreshLater(pod *corev1.Pod, st *syncState) bool {
	if !spec.HasFileVolumes(pod) {
		return false
	}
	st.out.soon(volumeRefreshPeriod)
	return true
}
