package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/pods/spec"
)

func ephemeralStatus(st corev1.PodStatus, name string) corev1.ContainerStatus {
	for _, cs := range st.EphemeralContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// An ephemeral container added to a running pod starts once in the pod's network and its
// target's process namespace, shows in ephemeralContainerStatuses, is adopted by a restarted
// kubelet and is never restarted.
func TestEphemeralContainerStartsOnce(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("pod running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })
	app, _ := h.running(pod.UID, "app")
	sandbox, _ := h.running(pod.UID, "POD")

	pod = pod.DeepCopy()
	pod.ResourceVersion = "2"
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent, Stdin: true, TTY: true}}}
	h.m.Update(pod)
	h.settle("debugger running", func() bool { return ephemeralStatus(h.latest(pod.UID), "debugger").State.Running != nil })
	dbg, ok := h.running(pod.UID, "debugger")
	if !ok {
		t.Fatal("no running debugger container")
	}
	cfg, _ := h.creates.last("k8s_debugger_")
	if cfg.PidMode != "container:"+app.ID || cfg.NetworkMode != "container:"+sandbox.ID || !cfg.Stdin || !cfg.TTY {
		t.Errorf("debugger config: pid %q network %q stdin %v tty %v, want the target's processes and the sandbox's network",
			cfg.PidMode, cfg.NetworkMode, cfg.Stdin, cfg.TTY)
	}
	if cs := ephemeralStatus(h.latest(pod.UID), "debugger"); cs.ContainerID != "docker://"+dbg.ID || cs.Ready {
		t.Errorf("debugger status: %+v", cs)
	}

	h.restart()
	h.m.Update(pod)
	h.m.MarkSynced()
	h.eventually("restarted kubelet reports the debugger", func() bool {
		return ephemeralStatus(h.latest(pod.UID), "debugger").ContainerID == "docker://"+dbg.ID
	})
	if _, ok := h.running(pod.UID, "debugger"); !ok || h.creates.count("k8s_debugger_") != 1 {
		t.Fatalf("the restarted kubelet did not adopt the debugger: %s", describe(h.containers(pod.UID)))
	}

	if err := h.rt.Exit(dbg.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("debugger terminated", func() bool {
		return ephemeralStatus(h.latest(pod.UID), "debugger").State.Terminated != nil
	})
	for i := 0; i < 30; i++ {
		h.clk.Step(time.Second)
	}
	h.settle("app still running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	n := 0
	for _, c := range h.containers(pod.UID) {
		if c.Labels[spec.LabelContainerName] == "debugger" {
			n++
		}
	}
	if _, running := h.running(pod.UID, "debugger"); running || n != 1 {
		t.Fatalf("the debugger was restarted: %s", describe(h.containers(pod.UID)))
	}
}

// A running ephemeral container goes with its pod.
func TestEphemeralContainerDeletedWithPod(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent, Stdin: true}}}
	h.m.Update(pod)
	h.settle("debugger running", func() bool { _, ok := h.running(pod.UID, "debugger"); return ok })

	del := pod.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	grace := int64(5)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	h.m.Update(del)
	h.settle("finalized", func() bool { return h.fin.count() == 1 })
	if cs := h.containers(pod.UID); len(cs) != 0 {
		t.Fatalf("containers left after deletion: %s", describe(cs))
	}
}
