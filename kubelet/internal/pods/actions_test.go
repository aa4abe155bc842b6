package pods

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox:1"})
	}
	for _, n := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Image: "echo:1"})
	}
	return pod
}

// ctr describes one observed container for the tables.
type ctr struct {
	name     string // "POD" for the sandbox
	id       string
	state    runtime.State
	exit     int
	restarts int
	stale    bool // spec hash differs from the pod's
}

func observedOf(pod *corev1.Pod, cs ...ctr) observed {
	var list []runtime.Container
	for i, c := range cs {
		var rc runtime.ContainerConfig
		if c.name == spec.SandboxName {
			rc = spec.Builder{}.Sandbox(pod, c.restarts)
		} else {
			var cont *corev1.Container
			for _, s := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				if s.Name == c.name {
					cont = &s
				}
			}
			if cont == nil {
				cont = &corev1.Container{Name: c.name, Image: "gone:1"}
			}
			rc.Labels = map[string]string{
				spec.LabelPodUID: string(pod.UID), spec.LabelContainerName: c.name,
				spec.LabelContainerHash: spec.Hash(cont), spec.LabelRestartCount: itoa(c.restarts),
			}
		}
		if c.stale {
			rc.Labels[spec.LabelContainerHash] = "stale"
		}
		list = append(list, runtime.Container{
			ID: c.id, Labels: rc.Labels, State: c.state, ExitCode: c.exit,
			CreatedAt: t0.Add(time.Duration(i) * time.Second), StartedAt: t0, FinishedAt: t0.Add(time.Minute),
		})
	}
	return observe(list)
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestComputeActions(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	run, exited, created := runtime.StateRunning, runtime.StateExited, runtime.StateCreated
	sb := ctr{name: "POD", id: "sb", state: run}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		obs       []ctr
		unhealthy map[string]string
		backOff   map[string]bool
		want      actions
	}{
		{
			name: "new pod creates the sandbox and starts every container",
			pod:  testPod(always, nil, "app", "side"),
			want: actions{killPod: true, createSandbox: true, nextInit: -1, start: []int{0, 1}},
		},
		{
			name: "new pod with init containers starts the first init only",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			want: actions{killPod: true, createSandbox: true, nextInit: 0},
		},
		{
			name: "everything running and unchanged: nothing to do",
			pod:  testPod(always, nil, "app", "side"),
			obs:  []ctr{sb, {name: "app", id: "a", state: run}, {name: "side", id: "s", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1},
		},
		{
			name: "Always restarts a container that exited 0",
			pod:  testPod(always, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0}},
		},
		{
			name: "OnFailure does not restart a success; with nothing left the pod is killed",
			pod:  testPod(onFailure, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited}},
			want: actions{killPod: true, sandboxID: "sb", nextInit: -1},
		},
		{
			name: "OnFailure restarts a failure",
			pod:  testPod(onFailure, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited, exit: 2}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0}},
		},
		{
			name: "Never with every container exited kills the pod",
			pod:  testPod(never, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited, exit: 1}},
			want: actions{killPod: true, sandboxID: "sb", nextInit: -1},
		},
		{
			name: "Never keeps the pod while one container still runs",
			pod:  testPod(never, nil, "app", "side"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited, exit: 1}, {name: "side", id: "s", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1},
		},
		{
			name: "a changed spec replaces the container even under Never",
			pod:  testPod(never, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: run, stale: true}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0},
				kill: map[string]killInfo{"a": {name: "app", message: "Container app definition changed, will be restarted"}}},
		},
		{
			name:      "liveness failure restarts under Always",
			pod:       testPod(always, nil, "app"),
			obs:       []ctr{sb, {name: "app", id: "a", state: run}},
			unhealthy: map[string]string{"a": "liveness"},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0},
				kill: map[string]killInfo{"a": {name: "app", probe: "liveness", message: "Container app failed liveness probe, will be restarted"}}},
		},
		{
			name:      "liveness failure under Never kills without restart",
			pod:       testPod(never, nil, "app"),
			obs:       []ctr{sb, {name: "app", id: "a", state: run}},
			unhealthy: map[string]string{"a": "liveness"},
			want: actions{killPod: true, sandboxID: "sb", nextInit: -1,
				kill: map[string]killInfo{"a": {name: "app", probe: "liveness", message: "Container app failed liveness probe"}}},
		},
		{
			name:      "startup probe failure restarts",
			pod:       testPod(always, nil, "app"),
			obs:       []ctr{sb, {name: "app", id: "a", state: run}},
			unhealthy: map[string]string{"a": "startup"},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0},
				kill: map[string]killInfo{"a": {name: "app", probe: "startup", message: "Container app failed startup probe, will be restarted"}}},
		},
		{
			name: "a dead sandbox is recreated with the next attempt and everything restarts",
			pod:  testPod(always, nil, "app"),
			obs:  []ctr{{name: "POD", id: "sb", state: exited}, {name: "app", id: "a", state: run}},
			want: actions{killPod: true, createSandbox: true, attempt: 1, nextInit: -1, start: []int{0}},
		},
		{
			name: "a dead sandbox of a Never pod whose containers ran is not recreated",
			pod:  testPod(never, nil, "app"),
			obs:  []ctr{{name: "POD", id: "sb", state: exited}, {name: "app", id: "a", state: exited}},
			want: actions{killPod: true, attempt: 1, nextInit: -1},
		},
		{
			name: "a new sandbox under OnFailure restarts only the failed containers",
			pod:  testPod(onFailure, nil, "ok", "bad"),
			obs: []ctr{{name: "POD", id: "sb", state: exited}, {name: "ok", id: "o", state: exited},
				{name: "bad", id: "b", state: exited, exit: 1}},
			want: actions{killPod: true, createSandbox: true, attempt: 1, nextInit: -1, start: []int{1}},
		},
		{
			name: "two running sandboxes are replaced",
			pod:  testPod(always, nil, "app"),
			obs:  []ctr{{name: "POD", id: "sb0", state: run}, {name: "POD", id: "sb1", state: run, restarts: 1}},
			want: actions{killPod: true, createSandbox: true, attempt: 2, nextInit: -1, start: []int{0}},
		},
		{
			name: "a running init container blocks everything",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			obs:  []ctr{sb, {name: "i1", id: "i1", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1},
		},
		{
			name: "init containers run in order",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			obs:  []ctr{sb, {name: "i1", id: "i1", state: exited}},
			want: actions{sandboxID: "sb", nextInit: 1},
		},
		{
			name: "app containers start after the last init container",
			pod:  testPod(always, []string{"i1", "i2"}, "app"),
			obs:  []ctr{sb, {name: "i1", id: "i1", state: exited}, {name: "i2", id: "i2", state: exited}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0}},
		},
		{
			name: "a failed init container is retried unless Never",
			pod:  testPod(onFailure, []string{"i1", "i2"}, "app"),
			obs:  []ctr{sb, {name: "i1", id: "i1", state: exited}, {name: "i2", id: "i2", state: exited, exit: 3}},
			want: actions{sandboxID: "sb", nextInit: 1},
		},
		{
			name: "a failed init container under Never kills the pod",
			pod:  testPod(never, []string{"i1"}, "app"),
			obs:  []ctr{sb, {name: "i1", id: "i1", state: exited, exit: 3}},
			want: actions{killPod: true, sandboxID: "sb", nextInit: -1},
		},
		{
			name: "a container that never started is killed and started again",
			pod:  testPod(always, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: created}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0},
				kill: map[string]killInfo{"a": {name: "app", message: "Container app is in an unknown state, will be restarted"}}},
		},
		{
			name:    "a container in back-off waits; the pod is not killed",
			pod:     testPod(always, nil, "app"),
			obs:     []ctr{sb, {name: "app", id: "a", state: exited, exit: 1}},
			backOff: map[string]bool{"app": true},
			want:    actions{sandboxID: "sb", nextInit: -1, backingOff: []string{"app"}},
		},
		{
			name:    "an init container in back-off waits",
			pod:     testPod(always, []string{"i1"}, "app"),
			obs:     []ctr{sb, {name: "i1", id: "i1", state: exited, exit: 1}},
			backOff: map[string]bool{"i1": true},
			want:    actions{sandboxID: "sb", nextInit: -1, backingOff: []string{"i1"}},
		},
		{
			name: "old exited attempts beyond the newest exited one are removed",
			pod:  testPod(always, nil, "app"),
			obs: []ctr{{name: "POD", id: "sb0", state: exited}, {name: "POD", id: "sb", state: run, restarts: 1},
				{name: "app", id: "a0", state: exited}, {name: "app", id: "a1", state: exited, restarts: 1},
				{name: "app", id: "a2", state: run, restarts: 2}},
			want: actions{sandboxID: "sb", nextInit: -1, remove: []string{"a0", "sb0"}},
		},
		{
			name: "a running container no longer in the spec is stopped",
			pod:  testPod(always, nil, "app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: run}, {name: "old", id: "o", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1,
				kill: map[string]killInfo{"o": {name: "old", message: "Container old is not in the pod spec"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computeActions(actionInput{pod: tt.pod, obs: observedOf(tt.pod, tt.obs...), unhealthy: tt.unhealthy, inBackOff: tt.backOff})
			opts := cmp.Options{cmp.AllowUnexported(actions{}, killInfo{}), cmpopts.EquateEmpty(),
				cmpopts.SortSlices(func(a, b string) bool { return a < b })}
			if diff := cmp.Diff(tt.want, got, opts); diff != "" {
				t.Errorf("computeActions (-want +got):\n%s", diff)
			}
		})
	}
}

// debugPod is testPod with ephemeral containers, each "name" or "name>target".
func debugPod(policy corev1.RestartPolicy, inits []string, apps []string, ephemeral ...string) *corev1.Pod {
	pod := testPod(policy, inits, apps...)
	for _, e := range ephemeral {
		name, target, _ := strings.Cut(e, ">")
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
			TargetContainerName:      target,
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1"}})
	}
	return pod
}

func TestComputeActionsEphemeral(t *testing.T) {
	always, never := corev1.RestartPolicyAlways, corev1.RestartPolicyNever
	run, exited := runtime.StateRunning, runtime.StateExited
	sb := ctr{name: "POD", id: "sb", state: run}
	app := ctr{name: "app", id: "a", state: run}
	tests := []struct {
		name string
		pod  *corev1.Pod
		obs  []ctr
		want actions
	}{
		{
			name: "a new one starts in the running pod",
			pod:  debugPod(always, nil, []string{"app"}, "dbg"),
			obs:  []ctr{sb, app},
			want: actions{sandboxID: "sb", nextInit: -1, startEphemeral: []int{0}},
		},
		{
			name: "one targeting a running container starts",
			pod:  debugPod(always, nil, []string{"app"}, "dbg>app"),
			obs:  []ctr{sb, app},
			want: actions{sandboxID: "sb", nextInit: -1, startEphemeral: []int{0}},
		},
		{
			name: "one targeting a container not running yet waits",
			pod:  debugPod(always, nil, []string{"app"}, "dbg>app"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited, exit: 1}},
			want: actions{sandboxID: "sb", nextInit: -1, start: []int{0}},
		},
		{
			name: "a running one is kept, not killed as unknown",
			pod:  debugPod(always, nil, []string{"app"}, "dbg"),
			obs:  []ctr{sb, app, {name: "dbg", id: "d", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1},
		},
		{
			name: "one that exited is never restarted, whatever the restart policy",
			pod:  debugPod(always, nil, []string{"app"}, "dbg", "dbg2"),
			obs:  []ctr{sb, app, {name: "dbg", id: "d", state: exited}},
			want: actions{sandboxID: "sb", nextInit: -1, startEphemeral: []int{1}},
		},
		{
			name: "may start while the pod initialises",
			pod:  debugPod(always, []string{"init"}, []string{"app"}, "dbg"),
			obs:  []ctr{sb, {name: "init", id: "i", state: run}},
			want: actions{sandboxID: "sb", nextInit: -1, startEphemeral: []int{0}},
		},
		{
			name: "not in a pod whose sandbox is being created",
			pod:  debugPod(always, nil, []string{"app"}, "dbg"),
			want: actions{killPod: true, createSandbox: true, nextInit: -1, start: []int{0}},
		},
		{
			name: "a running one does not keep a finished pod alive",
			pod:  debugPod(never, nil, []string{"app"}, "dbg"),
			obs:  []ctr{sb, {name: "app", id: "a", state: exited}, {name: "dbg", id: "d", state: run}},
			want: actions{killPod: true, sandboxID: "sb", nextInit: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computeActions(actionInput{pod: tt.pod, obs: observedOf(tt.pod, tt.obs...)})
			opts := cmp.Options{cmp.AllowUnexported(actions{}, killInfo{}), cmpopts.EquateEmpty()}
			if diff := cmp.Diff(tt.want, got, opts); diff != "" {
				t.Errorf("computeActions (-want +got):\n%s", diff)
			}
		})
	}
}
