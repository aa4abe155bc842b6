package status

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

var (
	t0  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func pod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox:1"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "echo:1"})
	}
	return p
}

func ctr(name, id string, state runtime.State, exit, restarts int, started time.Time) runtime.Container {
	return runtime.Container{
		ID: id, ImageID: "sha256:img", State: state, ExitCode: exit,
		Labels:    map[string]string{spec.LabelPodUID: "u1", spec.LabelContainerName: name, spec.LabelRestartCount: strconv.Itoa(restarts)},
		StartedAt: started, FinishedAt: started.Add(time.Minute),
	}
}

func cond(t corev1.PodConditionType, ok bool, reason, msg string, at time.Time) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
}

func TestComputeFull(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, "app")
	got := Compute(Input{
		Pod: p, PodIP: "10.244.0.5", HostIP: "192.168.1.2", Now: now,
		Containers: []runtime.Container{
			ctr("app", "old", runtime.StateExited, 2, 0, t0),
			ctr("app", "new", runtime.StateRunning, 0, 1, t0.Add(time.Minute)),
		},
	})
	tr := true
	want := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodInitialized, true, "", "", now),
			cond(corev1.ContainersReady, true, "", "", now),
			cond(corev1.PodReady, true, "", "", now),
			cond(corev1.PodScheduled, true, "", "", now),
		},
		HostIP: "192.168.1.2", HostIPs: []corev1.HostIP{{IP: "192.168.1.2"}},
		PodIP: "10.244.0.5", PodIPs: []corev1.PodIP{{IP: "10.244.0.5"}},
		StartTime: &metav1.Time{Time: now},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:  "app",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Minute))}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 2, Reason: "Error", StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(time.Minute)),
				ContainerID: "docker://old",
			}},
			Ready: true, RestartCount: 1, Image: "echo:1", ImageID: "sha256:img", ContainerID: "docker://new", Started: &tr,
		}},
		QOSClass: corev1.PodQOSBestEffort,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compute (-want +got):\n%s", diff)
	}
}

func TestCompute(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	run, exited := runtime.StateRunning, runtime.StateExited
	type view struct {
		Phase    corev1.PodPhase
		Ready    corev1.ConditionStatus
		Reason   string
		Message  string
		Init     corev1.ConditionStatus
		States   []string // per app container: state/reason
		Restarts []int32
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		cs      []runtime.Container
		waiting map[string]Waiting
		ready   map[string]bool
		want    view
	}{
		{
			name: "nothing created yet",
			pod:  pod(always, nil, "app", "side"),
			want: view{Phase: corev1.PodPending, Ready: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app side]",
				Init: "True", States: []string{"waiting/ContainerCreating", "waiting/ContainerCreating"}, Restarts: []int32{0, 0}},
		},
		{
			name:    "image pull failure shows in waiting",
			pod:     pod(always, nil, "app"),
			waiting: map[string]Waiting{"app": {Reason: "ErrImagePull", Message: "no registry"}},
			want: view{Phase: corev1.PodPending, Ready: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"waiting/ErrImagePull"}, Restarts: []int32{0}},
		},
		{
			name:    "crash loop under Always is Running and waiting with the last exit",
			pod:     pod(always, nil, "app"),
			cs:      []runtime.Container{ctr("app", "a", exited, 1, 3, t0)},
			waiting: map[string]Waiting{"app": {Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
			want: view{Phase: corev1.PodRunning, Ready: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"waiting/CrashLoopBackOff"}, Restarts: []int32{3}},
		},
		{
			name: "Never with success is Succeeded",
			pod:  pod(never, nil, "app"),
			cs:   []runtime.Container{ctr("app", "a", exited, 0, 0, t0)},
			want: view{Phase: corev1.PodSucceeded, Ready: "False", Reason: "PodCompleted", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"terminated/Completed"}, Restarts: []int32{0}},
		},
		{
			name: "Never with a failure is Failed",
			pod:  pod(never, nil, "app", "side"),
			cs:   []runtime.Container{ctr("app", "a", exited, 0, 0, t0), ctr("side", "s", exited, 1, 0, t0)},
			want: view{Phase: corev1.PodFailed, Ready: "False", Reason: "PodCompleted", Message: "containers with unready status: [app side]",
				Init: "True", States: []string{"terminated/Completed", "terminated/Error"}, Restarts: []int32{0, 0}},
		},
		{
			name: "OnFailure all succeeded is Succeeded",
			pod:  pod(onFailure, nil, "app"),
			cs:   []runtime.Container{ctr("app", "a", exited, 0, 2, t0)},
			want: view{Phase: corev1.PodSucceeded, Ready: "False", Reason: "PodCompleted", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"terminated/Completed"}, Restarts: []int32{2}},
		},
		{
			name: "OOM kill is reported",
			pod:  pod(never, nil, "app"),
			cs: []runtime.Container{func() runtime.Container {
				c := ctr("app", "a", exited, 137, 0, t0)
				c.OOMKilled = true
				return c
			}()},
			want: view{Phase: corev1.PodFailed, Ready: "False", Reason: "PodCompleted", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"terminated/OOMKilled"}, Restarts: []int32{0}},
		},
		{
			name: "init containers pending",
			pod:  pod(always, []string{"i1", "i2"}, "app"),
			cs:   []runtime.Container{ctr("i1", "i1", exited, 0, 0, t0), ctr("i2", "i2", run, 0, 0, t0)},
			want: view{Phase: corev1.PodPending, Ready: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
				Init: "False", States: []string{"waiting/PodInitializing"}, Restarts: []int32{0}},
		},
		{
			name: "a failed init container under Never fails the pod",
			pod:  pod(never, []string{"i1"}, "app"),
			cs:   []runtime.Container{ctr("i1", "i1", exited, 1, 0, t0)},
			want: view{Phase: corev1.PodFailed, Ready: "False", Reason: "PodCompleted", Message: "containers with unready status: [app]",
				Init: "False", States: []string{"waiting/PodInitializing"}, Restarts: []int32{0}},
		},
		{
			name: "readiness probe not passed yet",
			pod: func() *corev1.Pod {
				p := pod(always, nil, "app")
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
				return p
			}(),
			cs:    []runtime.Container{ctr("app", "a", run, 0, 0, t0)},
			ready: map[string]bool{"a": false},
			want: view{Phase: corev1.PodRunning, Ready: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
				Init: "True", States: []string{"running/"}, Restarts: []int32{0}},
		},
		{
			name: "readiness probe passed",
			pod: func() *corev1.Pod {
				p := pod(always, nil, "app")
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
				return p
			}(),
			cs:    []runtime.Container{ctr("app", "a", run, 0, 0, t0)},
			ready: map[string]bool{"a": true},
			want:  view{Phase: corev1.PodRunning, Ready: "True", Init: "True", States: []string{"running/"}, Restarts: []int32{0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Compute(Input{Pod: tt.pod, Containers: tt.cs, Waiting: tt.waiting, Ready: tt.ready, Now: now})
			got := view{Phase: st.Phase}
			for _, c := range st.Conditions {
				switch c.Type {
				case corev1.PodReady:
					got.Ready, got.Reason, got.Message = c.Status, c.Reason, c.Message
				case corev1.PodInitialized:
					got.Init = c.Status
				}
			}
			for _, cs := range st.ContainerStatuses {
				switch {
				case cs.State.Running != nil:
					got.States = append(got.States, "running/")
				case cs.State.Waiting != nil:
					got.States = append(got.States, "waiting/"+cs.State.Waiting.Reason)
				case cs.State.Terminated != nil:
					got.States = append(got.States, "terminated/"+cs.State.Terminated.Reason)
				}
				got.Restarts = append(got.Restarts, cs.RestartCount)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeKeepsTransitionTimesAndTerminalPhase(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, "app")
	prev := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &metav1.Time{Time: t0},
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReady, true, "", "", t0),
			cond(corev1.ContainersReady, false, "ContainersNotReady", "x", t0),
		},
	}
	st := Compute(Input{Pod: p, Previous: prev, Now: now, Containers: []runtime.Container{ctr("app", "a", runtime.StateRunning, 0, 0, t0)}})
	if !st.StartTime.Time.Equal(t0) {
		t.Errorf("StartTime = %v, want the previous %v", st.StartTime, t0)
	}
	for _, c := range st.Conditions {
		want := now
		if c.Type == corev1.PodReady {
			want = t0 // unchanged status keeps its transition time
		}
		if !c.LastTransitionTime.Time.Equal(want) {
			t.Errorf("condition %s transition = %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
	prev.Phase = corev1.PodSucceeded
	if st := Compute(Input{Pod: p, Previous: prev, Now: now}); st.Phase != corev1.PodSucceeded {
		t.Errorf("phase after Succeeded = %s, want Succeeded (terminal phases are final)", st.Phase)
	}
}

func TestQOSClass(t *testing.T) {
	q := resource.MustParse
	res := func(req, lim corev1.ResourceList) *corev1.Pod {
		p := pod(corev1.RestartPolicyAlways, nil, "app")
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
		return p
	}
	full := corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing", res(nil, nil), corev1.PodQOSBestEffort},
		{"limits only", res(nil, full), corev1.PodQOSGuaranteed},
		{"equal requests", res(full, full), corev1.PodQOSGuaranteed},
		{"requests only", res(full, nil), corev1.PodQOSBurstable},
		{"cpu limit only", res(nil, corev1.ResourceList{corev1.ResourceCPU: q("1")}), corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QOSClass(tt.pod); got != tt.want {
				t.Errorf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

// Ephemeral containers report in ephemeralContainerStatuses, never ready, and leave the pod's
// phase and readiness to its app containers.
func TestComputeEphemeralContainers(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, "app")
	for _, n := range []string{"dbg", "done", "new"} {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: n, Image: "busybox:1"}})
	}
	got := Compute(Input{Pod: p, Now: now, Containers: []runtime.Container{
		ctr("app", "a", runtime.StateRunning, 0, 0, t0),
		ctr("dbg", "d", runtime.StateRunning, 0, 0, t0),
		ctr("done", "e", runtime.StateExited, 0, 0, t0),
	}})
	if got.Phase != corev1.PodRunning || len(got.ContainerStatuses) != 1 || len(got.EphemeralContainerStatuses) != 3 {
		t.Fatalf("phase %s, %d app and %d ephemeral statuses", got.Phase, len(got.ContainerStatuses), len(got.EphemeralContainerStatuses))
	}
	dbg, done, fresh := got.EphemeralContainerStatuses[0], got.EphemeralContainerStatuses[1], got.EphemeralContainerStatuses[2]
	if dbg.Name != "dbg" || dbg.State.Running == nil || dbg.Ready || dbg.ContainerID != "docker://d" {
		t.Errorf("running debugger: %+v", dbg)
	}
	if done.State.Terminated == nil || done.State.Terminated.Reason != "Completed" {
		t.Errorf("exited debugger: %+v", done)
	}
	if fresh.State.Waiting == nil || fresh.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("debugger not started yet: %+v", fresh)
	}
	for _, c := range got.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			t.Errorf("an ephemeral container made the pod unready: %+v", c)
		}
	}
}
