package pods

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

// attempts steps the clock a second at a time for d, returning the clock's time at each new
// create of a container named prefix (the first at index 0 may precede the loop).
func (h *harness) attempts(prefix string, d time.Duration) []time.Time {
	h.t.Helper()
	var at []time.Time
	seen := 0
	end := h.clk.Now().Add(d)
	for {
		// Let the workers react to the last step before reading.
		time.Sleep(20 * time.Millisecond)
		for n := h.creates.count(prefix); seen < n; seen++ {
			at = append(at, h.clk.Now())
		}
		if !h.clk.Now().Before(end) {
			return at
		}
		h.clk.Step(time.Second)
	}
}

// checkBackOff fails unless every gap between attempts after the first two is the back-off
// Kubernetes gives: 10 s doubling (the first restart is immediate). A gap may exceed it by the
// clock's step, never fall short.
func checkBackOff(t *testing.T, at []time.Time, wantAttempts int) {
	t.Helper()
	if len(at) != wantAttempts {
		t.Fatalf("%d attempts at %v, want %d", len(at), at, wantAttempts)
	}
	want := 10 * time.Second
	for i := 2; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		if gap < want || gap > want+2*time.Second {
			t.Errorf("attempt %d came %s after the one before, want the back-off of %s (attempts at %v)", i+1, gap, want, at)
		}
		want *= 2
	}
}

func TestStartFailureBacksOff(t *testing.T) {
	h := newHarness(t)
	h.rt.SetExecutables("echo:1", "/echo")
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Command = []string{"sleep", "3600"}
	events := h.eventLog()
	h.m.Update(pod)

	// Attempts at 0 and 0 (the first restart is immediate), 10, 30, 70 and 150 s.
	checkBackOff(t, h.attempts("k8s_app_", 200*time.Second), 6)

	const missing = `exec: "sleep": executable file not found in $PATH`
	if !h.status.any(pod.UID, func(st corev1.PodStatus) bool {
		w := containerStatus(st, "app").State.Waiting
		return w != nil && w.Reason == "RunContainerError" && strings.Contains(w.Message, missing)
	}) {
		t.Errorf("no status showed the first failure as RunContainerError with the runtime's message")
	}
	cs := containerStatus(h.latest(pod.UID), "app")
	w := cs.State.Waiting
	if want := "back-off 2m40s restarting failed container=app pod=web-p1_default(p1)"; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != want {
		t.Errorf("waiting = %+v, want CrashLoopBackOff %q", w, want)
	}
	if cs.RestartCount != 5 {
		t.Errorf("restartCount = %d after 6 attempts, want 5", cs.RestartCount)
	}
	lt := cs.LastTerminationState.Terminated
	if lt == nil || lt.ExitCode != 127 || lt.Reason != "StartError" || !strings.Contains(lt.Message, missing) || lt.FinishedAt.IsZero() {
		t.Errorf("lastState.terminated = %+v, want exit code 127, StartError, the runtime's message, a finish time", lt)
	}

	// Every attempt reports the same Failed event, so the recorder counts them in one.
	got := events()
	var backOffs, failed int
	distinct := map[string]bool{}
	for _, e := range got {
		switch {
		case e == "Warning BackOff Back-off restarting failed container app in pod web-p1_default(p1)":
			backOffs++
		case strings.HasPrefix(e, "Warning Failed Error: ") && strings.Contains(e, missing):
			failed++
			distinct[e] = true
		}
	}
	if failed != 6 || len(distinct) != 1 || backOffs == 0 {
		t.Errorf("events: %d Failed with the runtime's message in %d forms (want one per attempt, 6, all alike), %d BackOff (want some):\n%s",
			failed, len(distinct), backOffs, strings.Join(got, "\n"))
	}

	// Only the newest failed attempt is kept, as an exited container would be.
	var left []runtime.Container
	for _, c := range h.containers(pod.UID) {
		if c.Labels[spec.LabelContainerName] == "app" {
			left = append(left, c)
		}
	}
	if len(left) != 1 || left[0].Labels[spec.LabelRestartCount] != "5" {
		t.Errorf("app containers kept: %s, want only the newest attempt (restart count 5)", describe(left))
	}
}

func TestCreateFailureBacksOff(t *testing.T) {
	h := newHarness(t)
	h.creates.setFail(func(cfg runtime.ContainerConfig) error {
		if strings.HasPrefix(cfg.Name, "k8s_app_") {
			return errors.New("Error response from daemon: invalid mount config")
		}
		return nil
	})
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)

	checkBackOff(t, h.attempts("k8s_app_", 75*time.Second), 5)
	w := containerStatus(h.latest(pod.UID), "app").State.Waiting
	if w == nil || w.Reason != "CreateContainerError" || !strings.Contains(w.Message, "invalid mount config") {
		t.Errorf("waiting = %+v, want CreateContainerError with the runtime's message while backing off", w)
	}

	// Once the runtime creates it, the container runs.
	h.creates.setFail(nil)
	h.eventually("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
}

// A new version of a pod that changes only its status (the kubelet's own writes, coming back)
// does not make its worker sync: a failing container would otherwise be retried at every
// report of its failure.
func TestStatusOnlyUpdateDoesNotSync(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })
	h.settle("status written", func() bool { _, n := h.status.latest(pod.UID); return n > 0 })
	time.Sleep(50 * time.Millisecond)
	before := h.podLists.countAll(string(pod.UID))

	for i := range 5 {
		echo := pod.DeepCopy()
		echo.Status = h.latest(pod.UID)
		echo.ResourceVersion = strings.Repeat("9", i+2)
		h.m.Update(echo)
	}
	time.Sleep(100 * time.Millisecond)
	if after := h.podLists.countAll(string(pod.UID)); after != before {
		t.Errorf("status-only updates caused %d syncs, want none", after-before)
	}

	// A change of spec does.
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "echo:2"
	h.m.Update(changed)
	h.settle("a sync for the new spec", func() bool { return h.podLists.countAll(string(pod.UID)) > before })
	h.eventually("new image running", func() bool {
		c, ok := h.running(pod.UID, "app")
		return ok && slices.Contains([]string{"echo:2"}, c.Image)
	})
}
