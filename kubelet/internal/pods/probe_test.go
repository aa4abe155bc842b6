package pods

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/runtime"
)

func TestProbesDriveReadyAndRestarts(t *testing.T) {
	h := newHarness(t)
	events := h.eventLog()
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: exec, PeriodSeconds: 1, FailureThreshold: 1}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: exec, PeriodSeconds: 1, FailureThreshold: 3}
	h.m.Update(pod)
	ready := func() bool { return condition(h.latest(pod.UID), corev1.PodReady) == corev1.ConditionTrue }
	h.eventually("ready after the readiness probe passes", ready)
	if !h.status.any(pod.UID, func(st corev1.PodStatus) bool {
		return st.Phase == corev1.PodRunning && condition(st, corev1.PodReady) == corev1.ConditionFalse
	}) {
		t.Error("the pod was never reported running but not ready before its first readiness probe")
	}

	// Failing checks: readiness drops first (threshold 1), then liveness restarts the container.
	first, _ := h.running(pod.UID, "app")
	if err := h.rt.SetExec(first.ID, runtime.ExecResult{ExitCode: 1, Output: []byte("sick")}); err != nil {
		t.Fatal(err)
	}
	h.eventually("not ready", func() bool { return !ready() })
	h.eventually("restarted by liveness", func() bool { return containerStatus(h.latest(pod.UID), "app").RestartCount == 1 })
	h.eventually("ready again with the new container", ready)
	got := events()
	for _, want := range []string{"Warning Unhealthy Liveness probe failed", "Warning Unhealthy Readiness probe failed",
		"Normal Killing Container app failed liveness probe, will be restarted"} {
		if !slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("no event starting %q in %q", want, got)
		}
	}
	if lt := containerStatus(h.latest(pod.UID), "app").LastTerminationState.Terminated; lt == nil || lt.ContainerID != "docker://"+first.ID {
		t.Errorf("lastState = %+v, want the killed container %s", lt, first.ID)
	}
}

func TestEventsOfAStart(t *testing.T) {
	h := newHarness(t)
	events := h.eventLog()
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	h.settle("events", func() bool { return len(events()) >= 3 })
	got := events()
	for _, want := range []string{`Normal Pulled Container image "echo:1" already present on machine`, "Normal Created Created container app", "Normal Started Started container app"} {
		if !slices.Contains(got, want) {
			t.Errorf("no event %q in %q", want, got)
		}
	}
}
