package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
}

func TestPodStatusReadyRestarts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	started := true
	deleted := ago(time.Second)
	cases := []struct {
		name string
		pod  corev1.Pod
		// want holds the READY, STATUS and RESTARTS cells.
		want []any
	}{
		{
			name: "pending unscheduled",
			pod: corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending},
			},
			want: []any{"0/1", "Pending", "0"},
		},
		{
			name: "running and ready",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", Ready: true, State: running()},
					{Name: "b", Ready: true, State: running()},
				}},
			},
			want: []any{"2/2", "Running", "0"},
		},
		{
			name: "crash loop with restarts and last restart age",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
					Name: "a", RestartCount: 3, State: waiting("CrashLoopBackOff"),
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(5 * time.Minute)}},
				}}},
			},
			want: []any{"0/1", "CrashLoopBackOff", "3 (5m ago)"},
		},
		{
			name: "image pull error",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: waiting("ErrImagePull")},
				}},
			},
			want: []any{"0/1", "ErrImagePull", "0"},
		},
		{
			name: "terminated without reason shows exit code",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("", 2)},
				}},
			},
			want: []any{"0/1", "ExitCode:2", "0"},
		},
		{
			name: "completed",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("Completed", 0)},
				}},
			},
			want: []any{"0/1", "Completed", "0"},
		},
		{
			name: "one completed one still running and pod ready",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
				Status: corev1.PodStatus{
					Phase:      corev1.PodRunning,
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
					ContainerStatuses: []corev1.ContainerStatus{
						{Name: "a", State: terminated("Completed", 0)},
						{Name: "b", Ready: true, State: running()},
					},
				},
			},
			want: []any{"1/2", "Running", "0"},
		},
		{
			name: "one completed one running but pod not ready",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("Completed", 0)},
					{Name: "b", Ready: true, State: running()},
				}},
			},
			want: []any{"1/2", "NotReady", "0"},
		},
		{
			name: "first init container still running",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: running()}},
					ContainerStatuses:     []corev1.ContainerStatus{{Name: "a", State: waiting("PodInitializing")}},
				},
			},
			want: []any{"0/1", "Init:0/1", "0"},
		},
		{
			name: "second of two init containers running after the first finished",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i1", State: terminated("Completed", 0)},
					{Name: "i2", State: running()},
				}},
			},
			want: []any{"0/1", "Init:1/2", "0"},
		},
		{
			name: "init container crash loop counts its restarts",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "init", RestartCount: 4, State: waiting("CrashLoopBackOff")},
				}},
			},
			want: []any{"0/1", "Init:CrashLoopBackOff", "4"},
		},
		{
			name: "init container failed with a reason",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "init", State: terminated("Error", 1)},
				}},
			},
			want: []any{"0/1", "Init:Error", "0"},
		},
		{
			name: "sidecar counts as a ready container",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always}},
					Containers:     []corev1.Container{{Name: "a"}},
				},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodRunning,
					Conditions:            []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}},
					InitContainerStatuses: []corev1.ContainerStatus{{Name: "side", Ready: true, Started: &started, State: running(), RestartCount: 1}},
					ContainerStatuses:     []corev1.ContainerStatus{{Name: "a", Ready: true, State: running()}},
				},
			},
			want: []any{"2/2", "Running", "1"},
		},
		{
			name: "deleting a running pod shows Terminating",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", Ready: true, State: running()},
				}},
			},
			want: []any{"1/1", "Terminating", "0"},
		},
		{
			name: "deleting a pod of a lost node shows Unknown",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"},
			},
			want: []any{"0/1", "Unknown", "0"},
		},
		{
			name: "deleting a finished pod keeps its status",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("Completed", 0)},
				}},
			},
			want: []any{"0/1", "Completed", "0"},
		},
		{
			name: "status reason such as Evicted wins over phase",
			pod: corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"},
			},
			want: []any{"0/1", "Evicted", "0"},
		},
		{
			name: "scheduling gated",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated},
				}},
			},
			want: []any{"0/1", "SchedulingGated", "0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.Name = "p"
			tc.pod.CreationTimestamp = ago(time.Hour)
			row := podRow(&tc.pod, now)
			if diff := cmp.Diff(tc.want, row.Cells[1:4]); diff != "" {
				t.Errorf("READY, STATUS, RESTARTS (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodWideCells(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(90 * time.Second)},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			Containers:     []corev1.Container{{Name: "a"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "x"}, {ConditionType: "y"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIPs:     []corev1.PodIP{{IP: "10.244.1.5"}},
			Conditions: []corev1.PodCondition{{Type: "x", Status: corev1.ConditionTrue}, {Type: "y", Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", Ready: true, State: running()},
			},
		},
	}
	want := []any{"web", "1/1", "Running", "0", "90s", "10.244.1.5", "node-1", "<none>", "1/2"}
	if diff := cmp.Diff(want, podRow(pod, now).Cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}
