package abuse

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StormLabel marks the pods of a storm, with the kind of failure as its value.
const StormLabel = "minik8s.io/storm"

// The two kinds of failing pod in a storm.
const (
	// MissingCommand pods run a command their image lacks: every start fails.
	MissingCommand = "missing-command"
	// ExitAtOnce pods start a container that exits 1 at once.
	ExitAtOnce = "exit-at-once"
)

// StormPods returns n pods of each kind of failure, in namespace, restarted Always: those of
// MissingCommand run sleep in minik8s/echo:1.0, which has no sleep; those of ExitAtOnce run
// sh -c "exit 1" in minik8s/busybox:1.0.
func StormPods(namespace string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods,
			stormPod(namespace, fmt.Sprintf("missing-%d", i), MissingCommand, "minik8s/echo:1.0", "sleep", "3600"),
			stormPod(namespace, fmt.Sprintf("exit-%d", i), ExitAtOnce, "minik8s/busybox:1.0", "sh", "-c", "exit 1"))
	}
	return pods
}

func stormPod(namespace, name, kind, image string, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{StormLabel: kind}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{
				Name: "c", Image: image, Command: command, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// BackOffSchedule is when the kubelet may start a failing container's attempts, from its
// first: at once, again at once, then 10 s later doubling to at most 5 min apart, as
// Kubernetes' CrashLoopBackOff.
func BackOffSchedule(n int) []int {
	at := []int{0, 0}
	gap := 10
	for len(at) < n {
		at = append(at, at[len(at)-1]+gap)
		gap = min(gap*2, 300)
	}
	return at[:n]
}

// MaxRestarts is the most restarts the back-off allows within seconds of a pod's first attempt.
func MaxRestarts(seconds int) int {
	n := 0
	for _, at := range BackOffSchedule(seconds/10 + 3) {
		if at <= seconds {
			n++
		}
	}
	return n - 1
}
