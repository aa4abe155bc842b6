package pods

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netfake "minik8s.io/kubelet/internal/network/fake"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

func TestTwoContainerPodStartsSandboxFirst(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app", "side")
	h.m.Update(pod)
	h.settle("pod running and ready", func() bool {
		st := h.latest(pod.UID)
		return st.Phase == corev1.PodRunning && condition(st, corev1.PodReady) == corev1.ConditionTrue
	})
	st := h.latest(pod.UID)
	if !netip.MustParsePrefix("10.244.1.0/24").Contains(netip.MustParseAddr(st.PodIP)) {
		t.Errorf("podIP = %q, want one from 10.244.1.0/24", st.PodIP)
	}
	if st.HostIP != "192.168.1.2" || st.StartTime == nil || st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("hostIP=%q startTime=%v qos=%s, want 192.168.1.2, set, BestEffort", st.HostIP, st.StartTime, st.QOSClass)
	}
	var creates []string
	for _, c := range h.rt.Calls() {
		if c.Method == "Create" {
			creates = append(creates, strings.SplitN(c.Arg, "_", 3)[1])
		}
	}
	if len(creates) != 3 || creates[0] != "POD" {
		t.Errorf("created %v, want the sandbox first, then app and side", creates)
	}
	var setups []netfake.Call
	for _, c := range h.net.Calls() {
		if c.Op == netfake.OpSetUp {
			setups = append(setups, c)
		}
	}
	if len(setups) != 1 || setups[0].IP != st.PodIP {
		t.Errorf("network SetUp calls = %+v, want one returning %s", setups, st.PodIP)
	}
	sandbox, _ := h.running(pod.UID, "POD")
	for _, name := range []string{"app", "side"} {
		c, ok := h.running(pod.UID, name)
		if !ok {
			t.Fatalf("container %s not running", name)
		}
		cs := containerStatus(st, name)
		if cs.ContainerID != "docker://"+c.ID || !cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
			t.Errorf("status of %s = %+v, want running, ready, id docker://%s", name, cs, c.ID)
		}
		if setups[0].Pod.ID != sandbox.ID {
			t.Errorf("network attached %s, want the sandbox %s", setups[0].Pod.ID, sandbox.ID)
		}
	}
	// The status is written again only when it changes.
	_, writes := h.status.latest(pod.UID)
	for range 15 {
		h.clk.Step(time.Second)
	}
	h.settle("resyncs done", func() bool { return h.clk.Waiters() > 0 })
	time.Sleep(50 * time.Millisecond)
	if _, again := h.status.latest(pod.UID); again != writes {
		t.Errorf("status writes grew from %d to %d with nothing changing", writes, again)
	}
}

// A hostNetwork pod is not attached to the pod network: its address is the node's, it gets
// no hosts file of its own, and deleting it tears nothing down.
func TestHostNetworkPodUsesTheNodeAddress(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostNetwork = true
	h.m.Update(pod)
	h.settle("pod running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })
	st := h.latest(pod.UID)
	if st.PodIP != "192.168.1.2" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "192.168.1.2" {
		t.Errorf("podIP %q podIPs %v, want the node's 192.168.1.2", st.PodIP, st.PodIPs)
	}
	app, _ := h.creates.last("k8s_app_")
	if !slices.Contains(app.Env, "POD_IP=192.168.1.2") {
		t.Errorf("app env %v, want POD_IP=192.168.1.2", app.Env)
	}
	if slices.ContainsFunc(app.Mounts, func(m runtime.Mount) bool { return m.ContainerPath == "/etc/hosts" }) {
		t.Errorf("app mounts %v: a hostNetwork pod keeps the node's /etc/hosts", app.Mounts)
	}
	if sb, _ := h.creates.last("k8s_POD_"); sb.NetworkMode != "host" {
		t.Errorf("sandbox network mode %q, want host", sb.NetworkMode)
	}
	del := pod.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	grace := int64(1)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	h.m.Update(del)
	h.settle("finalized", func() bool { return h.fin.count() == 1 })
	if calls := h.net.Calls(); len(calls) != 0 {
		t.Errorf("network calls for a hostNetwork pod: %+v, want none", calls)
	}
}

func TestExitedContainerRestartsWithBackOff(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })

	// The first restart is immediate.
	first, _ := h.running(pod.UID, "app")
	if err := h.rt.Exit(first.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("first restart", func() bool { return containerStatus(h.latest(pod.UID), "app").RestartCount == 1 })
	second, ok := h.running(pod.UID, "app")
	if !ok || second.ID == first.ID || second.Labels[spec.LabelRestartCount] != "1" {
		t.Fatalf("after the first exit: running=%v id=%s labels=%v, want a new container with restart-count 1", ok, second.ID, second.Labels)
	}
	cs := containerStatus(h.latest(pod.UID), "app")
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" {
		t.Errorf("lastState = %+v, want terminated with exit code 1, reason Error", cs.LastTerminationState)
	}

	// The second waits 10 s in CrashLoopBackOff.
	if err := h.rt.Exit(second.ID, 2, false); err != nil {
		t.Fatal(err)
	}
	died := h.clk.Now()
	h.eventually("crash loop back-off", func() bool {
		w := containerStatus(h.latest(pod.UID), "app").State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	w := containerStatus(h.latest(pod.UID), "app").State.Waiting
	if want := "back-off 10s restarting failed container=app pod=web-p1_default(p1)"; w.Message != want {
		t.Errorf("waiting message = %q, want %q", w.Message, want)
	}
	if st := h.latest(pod.UID); st.Phase != corev1.PodRunning || condition(st, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("phase %s ready %s during back-off, want Running and not ready", st.Phase, condition(st, corev1.PodReady))
	}
	h.eventually("second restart", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	if waited := h.clk.Since(died); waited < 10*time.Second {
		t.Errorf("restarted %s after the exit, want at least the 10s back-off", waited)
	}
	h.eventually("restart count 2", func() bool { return containerStatus(h.latest(pod.UID), "app").RestartCount == 2 })

	// Old attempts beyond the newest exited one are removed.
	var exited int
	for _, c := range h.containers(pod.UID) {
		if c.Labels[spec.LabelContainerName] == "app" && c.State == runtime.StateExited {
			exited++
		}
	}
	if exited != 1 {
		t.Errorf("%d exited app containers kept, want 1 (for logs --previous)", exited)
	}
}

func TestRestartPolicies(t *testing.T) {
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		exit        int
		wantRestart bool
		wantPhase   corev1.PodPhase
	}{
		{"OnFailure success is done", corev1.RestartPolicyOnFailure, 0, false, corev1.PodSucceeded},
		{"OnFailure failure restarts", corev1.RestartPolicyOnFailure, 1, true, corev1.PodRunning},
		{"Never failure is Failed", corev1.RestartPolicyNever, 1, false, corev1.PodFailed},
		{"Never success is Succeeded", corev1.RestartPolicyNever, 0, false, corev1.PodSucceeded},
		{"Always success restarts", corev1.RestartPolicyAlways, 0, true, corev1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			pod := newPod("p1", tt.policy, "app")
			h.m.Update(pod)
			h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
			c, _ := h.running(pod.UID, "app")
			if err := h.rt.Exit(c.ID, tt.exit, false); err != nil {
				t.Fatal(err)
			}
			if tt.wantRestart {
				h.eventually("restart", func() bool { return containerStatus(h.latest(pod.UID), "app").RestartCount == 1 })
				if st := h.latest(pod.UID); st.Phase != tt.wantPhase {
					t.Errorf("phase = %s, want %s", st.Phase, tt.wantPhase)
				}
				return
			}
			h.eventually("terminal phase", func() bool { return h.latest(pod.UID).Phase == tt.wantPhase })
			// A finished pod's sandbox stops and its address is released, but its exited
			// containers stay for logs.
			h.eventually("sandbox stopped", func() bool { _, ok := h.running(pod.UID, "POD"); return !ok && len(h.net.Attached()) == 0 })
			for range 20 {
				h.clk.Step(time.Second)
			}
			time.Sleep(20 * time.Millisecond)
			if _, ok := h.running(pod.UID, "app"); ok {
				t.Error("app restarted, want it left exited")
			}
			st := h.latest(pod.UID)
			if st.Phase != tt.wantPhase || containerStatus(st, "app").RestartCount != 0 || st.PodIP == "" {
				t.Errorf("phase=%s restarts=%d podIP=%q, want %s, 0 and the IP kept", st.Phase, containerStatus(st, "app").RestartCount, st.PodIP, tt.wantPhase)
			}
		})
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "i1", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent},
		{Name: "i2", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent},
	}
	h.m.Update(pod)
	h.settle("i1 running", func() bool { _, ok := h.running(pod.UID, "i1"); return ok })
	for _, c := range h.containers(pod.UID) {
		if name := c.Labels[spec.LabelContainerName]; name == "i2" || name == "app" {
			t.Fatalf("%s created while i1 runs", name)
		}
	}
	h.eventually("pending while initialising", func() bool {
		st := h.latest(pod.UID)
		return st.Phase == corev1.PodPending && condition(st, corev1.PodInitialized) == corev1.ConditionFalse &&
			containerStatus(st, "app").State.Waiting != nil && containerStatus(st, "app").State.Waiting.Reason == "PodInitializing"
	})

	// A failing init container is retried (OnFailure semantics for inits under Always).
	i1, _ := h.running(pod.UID, "i1")
	if err := h.rt.Exit(i1.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("i1 retried", func() bool { c, ok := h.running(pod.UID, "i1"); return ok && c.ID != i1.ID })
	i1, _ = h.running(pod.UID, "i1")
	if err := h.rt.Exit(i1.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("i2 running", func() bool { _, ok := h.running(pod.UID, "i2"); return ok })
	if _, ok := h.running(pod.UID, "app"); ok {
		t.Fatal("app started before i2 finished")
	}
	i2, _ := h.running(pod.UID, "i2")
	if err := h.rt.Exit(i2.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("app running and pod initialised", func() bool {
		st := h.latest(pod.UID)
		return st.Phase == corev1.PodRunning && condition(st, corev1.PodInitialized) == corev1.ConditionTrue
	})
	st := h.latest(pod.UID)
	for _, name := range []string{"i1", "i2"} {
		if term := containerStatus(st, name).State.Terminated; term == nil || term.Reason != "Completed" {
			t.Errorf("init %s state = %+v, want terminated Completed", name, containerStatus(st, name).State)
		}
	}
	if containerStatus(st, "i1").RestartCount != 1 {
		t.Errorf("i1 restartCount = %d, want 1", containerStatus(st, "i1").RestartCount)
	}
}

func TestNeverPodWithFailedInitFails(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyNever, "app")
	pod.Spec.InitContainers = []corev1.Container{{Name: "i1", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent}}
	h.m.Update(pod)
	h.settle("i1 running", func() bool { _, ok := h.running(pod.UID, "i1"); return ok })
	i1, _ := h.running(pod.UID, "i1")
	if err := h.rt.Exit(i1.ID, 3, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod failed", func() bool { return h.latest(pod.UID).Phase == corev1.PodFailed })
	for _, c := range h.containers(pod.UID) {
		if c.Labels[spec.LabelContainerName] == "app" {
			t.Errorf("app container created after its init container failed under Never")
		}
	}
}

func TestDeletionStopsCleansUpAndFinalizesOnce(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app", "side")
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	h.m.Update(pod)
	h.settle("running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })
	podDir := h.m.builder.PodDir(string(pod.UID))
	if _, err := os.Stat(podDir); err != nil {
		t.Fatalf("pod dir with the emptyDir: %v", err)
	}
	sandbox, _ := h.running(pod.UID, "POD")
	h.rt.ResetCalls()
	h.net.ResetCalls()

	del := pod.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	grace := int64(5)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	h.m.Update(del)
	h.settle("finalized", func() bool { return h.fin.count() == 1 })

	if n := len(h.containers(pod.UID)); n != 0 || h.fin.containersLeft != 0 || h.fin.attachedLeft != 0 {
		t.Errorf("containers left=%d (at finalize %d), attached at finalize=%d; want none", n, h.fin.containersLeft, h.fin.attachedLeft)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
	// Order: app containers stop before the network goes, the network before the sandbox.
	var order []string
	for _, c := range h.rt.Calls() {
		if c.Method == "Stop" {
			if c.Arg == sandbox.ID {
				order = append(order, "stop-sandbox")
			} else {
				order = append(order, "stop-app")
			}
		}
	}
	if !slices.Equal(order, []string{"stop-app", "stop-app", "stop-sandbox"}) {
		t.Errorf("stop order = %v, want both apps, then the sandbox", order)
	}
	var tornDown bool
	for _, c := range h.net.Calls() {
		if c.Op == netfake.OpTearDown && c.Pod.ID == sandbox.ID && c.Err == nil {
			tornDown = true
		}
	}
	if !tornDown {
		t.Errorf("no TearDown of sandbox %s: %+v", sandbox.ID, h.net.Calls())
	}

	// Later updates of the deleted pod and more relists do not finalize again.
	h.m.Update(del)
	for range 15 {
		h.clk.Step(time.Second)
	}
	time.Sleep(50 * time.Millisecond)
	if n := h.fin.count(); n != 1 {
		t.Errorf("Finalize called %d times, want 1", n)
	}
}

func TestRemoveCleansUpWithoutFinalizing(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	h.m.Remove(pod.UID)
	h.settle("cleaned up", func() bool { return len(h.containers(pod.UID)) == 0 && len(h.net.Attached()) == 0 })
	if n := h.fin.count(); n != 0 {
		t.Errorf("Finalize called %d times for a pod gone from the API, want 0", n)
	}
}

func TestAdoptionAfterRestart(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app", "side")
	h.m.Update(pod)
	h.settle("running", func() bool {
		return h.latest(pod.UID).Phase == corev1.PodRunning && h.latest(pod.UID).ContainerStatuses[1].Ready
	})
	before := h.containers(pod.UID)
	ip := h.latest(pod.UID).PodIP

	h.restart()
	h.rt.ResetCalls()
	adopted := pod.DeepCopy()
	adopted.Status = h.latest(pod.UID)
	_, writes := h.status.latest(pod.UID)
	h.m.Update(adopted)
	h.m.MarkSynced()
	for range 5 {
		h.clk.Step(time.Second)
	}
	h.settle("synced", func() bool {
		return slices.ContainsFunc(h.rt.Calls(), func(c rtCall) bool { return c.Method == "List" })
	})
	time.Sleep(50 * time.Millisecond)
	for _, c := range h.rt.Calls() {
		if c.Method == "Create" || c.Method == "Stop" || c.Method == "Remove" {
			t.Errorf("adoption called %s(%s), want nothing changed", c.Method, c.Arg)
		}
	}
	if after := h.containers(pod.UID); describe(after) != describe(before) {
		t.Errorf("containers changed: %s -> %s", describe(before), describe(after))
	}
	if _, again := h.status.latest(pod.UID); again != writes {
		t.Errorf("adoption wrote the status %d more times, want none (nothing changed)", again-writes)
	}
	if got := h.net.Attached(); len(got) != 1 || !slices.Contains(mapsValues(got), ip) {
		t.Errorf("attached = %v, want the one sandbox with %s", got, ip)
	}

	// A changed spec replaces that container only, continuing its restart count.
	side, _ := h.running(pod.UID, "side")
	app, _ := h.running(pod.UID, "app")
	changed := adopted.DeepCopy()
	changed.Spec.Containers[0].Image = "echo:2"
	h.m.Update(changed)
	h.eventually("app replaced", func() bool {
		c, ok := h.running(pod.UID, "app")
		return ok && c.ID != app.ID
	})
	newApp, _ := h.running(pod.UID, "app")
	if newApp.Image != "echo:2" || newApp.Labels[spec.LabelRestartCount] != "1" {
		t.Errorf("new app image=%s restart-count=%s, want echo:2 and 1", newApp.Image, newApp.Labels[spec.LabelRestartCount])
	}
	if c, ok := h.running(pod.UID, "side"); !ok || c.ID != side.ID {
		t.Errorf("side was touched by a change to app")
	}
	if _, ok := h.running(pod.UID, "POD"); !ok {
		t.Error("sandbox not running after replacing a container")
	}
}

func mapsValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestOrphansRemovedOnlyAfterSync(t *testing.T) {
	h := newHarness(t)
	// Containers of a pod this kubelet has not (yet) been told about.
	ghost := newPod("ghost", corev1.RestartPolicyAlways, "app")
	cfg := h.m.builder.Sandbox(ghost, 0)
	id, err := h.rt.Create(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Start(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		h.clk.Step(time.Second)
	}
	h.settle("relisted", func() bool { return !h.m.LastRelist().IsZero() })
	time.Sleep(50 * time.Millisecond)
	if n := len(h.containers(ghost.UID)); n != 1 {
		t.Fatalf("unknown pod's containers = %d before MarkSynced, want 1 kept", n)
	}
	h.m.MarkSynced()
	h.eventually("orphan removed", func() bool { return len(h.containers(ghost.UID)) == 0 })
	if n := h.fin.count(); n != 0 {
		t.Errorf("Finalize called %d times for an orphan, want 0", n)
	}
}

func TestImagePullFailures(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Image = "missing:1"
	h.m.Update(pod)
	reason := func() string {
		if w := containerStatus(h.latest(pod.UID), "app").State.Waiting; w != nil {
			return w.Reason
		}
		return ""
	}
	// The first failure says ErrImagePull with the runtime's reason, later ones back off.
	h.settle("ErrImagePull", func() bool {
		return h.status.any(pod.UID, func(st corev1.PodStatus) bool {
			w := containerStatus(st, "app").State.Waiting
			return w != nil && w.Reason == "ErrImagePull" && strings.Contains(w.Message, "registry unavailable")
		})
	})
	h.eventually("ImagePullBackOff", func() bool { return reason() == "ImagePullBackOff" })
	h.rt.AddImage("missing:1")
	h.eventually("running once the image is there", func() bool { _, ok := h.running(pod.UID, "app"); return ok })

	// Always with no registry uses the local image.
	p2 := newPod("p2", corev1.RestartPolicyAlways, "app")
	p2.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	h.m.Update(p2)
	h.settle("Always runs the local image", func() bool { _, ok := h.running(p2.UID, "app"); return ok })

	// Never without the image says so.
	p3 := newPod("p3", corev1.RestartPolicyAlways, "app")
	p3.Spec.Containers[0].Image, p3.Spec.Containers[0].ImagePullPolicy = "absent:1", corev1.PullNever
	h.m.Update(p3)
	h.settle("ErrImageNeverPull", func() bool {
		w := containerStatus(h.latest(p3.UID), "app").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	if slices.ContainsFunc(h.rt.Calls(), func(c rtCall) bool { return c.Method == "Pull" && c.Arg == "absent:1" }) {
		t.Error("pulled an image whose policy is Never")
	}
}

func TestOOMKillReported(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyNever, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	c, _ := h.running(pod.UID, "app")
	if err := h.rt.Exit(c.ID, 137, true); err != nil {
		t.Fatal(err)
	}
	h.eventually("OOMKilled", func() bool {
		term := containerStatus(h.latest(pod.UID), "app").State.Terminated
		return term != nil && term.Reason == "OOMKilled" && term.ExitCode == 137
	})
}

func TestDeadSandboxIsRecreated(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { return h.latest(pod.UID).Phase == corev1.PodRunning })
	sandbox, _ := h.running(pod.UID, "POD")
	app, _ := h.running(pod.UID, "app")
	if err := h.rt.Exit(sandbox.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	h.eventually("new sandbox and app", func() bool {
		s, ok := h.running(pod.UID, "POD")
		a, ok2 := h.running(pod.UID, "app")
		return ok && ok2 && s.ID != sandbox.ID && a.ID != app.ID
	})
	s, _ := h.running(pod.UID, "POD")
	if s.Labels[spec.LabelRestartCount] != "1" {
		t.Errorf("new sandbox attempt = %s, want 1", s.Labels[spec.LabelRestartCount])
	}
	if _, ok := h.net.IP(sandbox.ID); ok {
		t.Error("the dead sandbox's address was not released")
	}
	if _, ok := h.net.IP(s.ID); !ok {
		t.Error("the new sandbox has no address")
	}
	h.eventually("status shows one restart", func() bool { return containerStatus(h.latest(pod.UID), "app").RestartCount == 1 })
}

// Several kubelets may share one container engine: each removes only its own node's orphans.
func TestOtherNodesContainersAreLeftAlone(t *testing.T) {
	h := newHarness(t)
	other := newPod("elsewhere", corev1.RestartPolicyAlways, "app")
	theirs := spec.Builder{NodeName: "n2", RootDir: h.root, SandboxImage: spec.DefaultSandboxImage}
	id, err := h.rt.Create(t.Context(), theirs.Sandbox(other, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Start(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	ghost := newPod("ghost", corev1.RestartPolicyAlways, "app")
	mine, err := h.rt.Create(t.Context(), h.m.builder.Sandbox(ghost, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Start(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	h.m.MarkSynced()
	// The own orphan goes, which proves the relists ran; the other node's container stays.
	h.eventually("own orphan removed", func() bool { return len(h.containers(ghost.UID)) == 0 })
	if n := len(h.containers(other.UID)); n != 1 {
		t.Fatalf("another node's containers = %d after this node's relists, want 1", n)
	}
}

// Pods sharing an image ask the engine about it once while it is fresh, and an image removed
// behind the kubelet's back costs a failed create, after which it is asked about again.
func TestImagePresenceIsRemembered(t *testing.T) {
	h := newHarness(t)
	asked := func(image string) int {
		n := 0
		for _, c := range h.rt.Calls() {
			if c.Method == "ImagePresent" && c.Arg == image {
				n++
			}
		}
		return n
	}
	p1 := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(p1)
	h.settle("p1 running", func() bool { _, ok := h.running(p1.UID, "app"); return ok })
	p2 := newPod("p2", corev1.RestartPolicyAlways, "app")
	h.m.Update(p2)
	h.settle("p2 running", func() bool { _, ok := h.running(p2.UID, "app"); return ok })
	if n := asked("echo:1"); n != 1 {
		t.Errorf("asked the engine about echo:1 %d times for two pods, want 1", n)
	}
	if n := asked(spec.DefaultSandboxImage); n != 1 {
		t.Errorf("asked the engine about the sandbox image %d times for two pods, want 1", n)
	}

	// The image goes away: the next create fails with the runtime's reason, and once the image
	// is back the pod starts without waiting out the remembered presence.
	h.rt.RemoveImage("echo:1")
	p3 := newPod("p3", corev1.RestartPolicyAlways, "app")
	h.m.Update(p3)
	h.settle("p3 waits with a create error", func() bool {
		return h.status.any(p3.UID, func(st corev1.PodStatus) bool {
			w := containerStatus(st, "app").State.Waiting
			return w != nil && w.Reason == "CreateContainerError"
		})
	})
	h.rt.AddImage("echo:1")
	h.eventually("p3 running once the image is back", func() bool { _, ok := h.running(p3.UID, "app"); return ok })
	if n := asked("echo:1"); n < 2 {
		t.Errorf("the engine was not asked about echo:1 again after a create failed for want of it")
	}
}

// Once the PLEG has relisted, a new pod's worker does not ask the engine for the pod's
// containers before creating any: the answer could only be "none".
func TestNewPodSkipsTheEmptyList(t *testing.T) {
	h := newHarness(t)
	h.settle("first relist", func() bool { return !h.m.LastRelist().IsZero() })
	pod := newPod("p1", corev1.RestartPolicyAlways, "app")
	h.m.Update(pod)
	h.settle("running", func() bool { _, ok := h.running(pod.UID, "app"); return ok })
	if n := h.podLists.count(string(pod.UID)); n != 0 {
		t.Errorf("listed the new pod's containers %d times while it had none", n)
	}
}
