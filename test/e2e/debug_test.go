package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// TestKubectlDebug debugs a running pod on make up with both kubectls, as Kubernetes allows:
// kubectl debug adds an ephemeral container that sees the target container's processes, once
// with --attach=false (its output read with kubectl logs), attached with -i (stdin piped into
// its shell) and with -it under a terminal, and each shows in the pod's
// ephemeralContainerStatuses.
func TestKubectlDebug(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-debug")
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	for i, k := range c.kubectls(t) {
		t.Run(k.name, func(t *testing.T) {
			name := "target-" + k.name
			// The target's process, recognisable in ps: sleep with a number of its own.
			marker := "sleep " + strconv.Itoa(31337+i)
			create[*corev1.Pod, *corev1.PodList](t, c, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "minik8s/busybox:1.0",
					Command: strings.Fields(marker)}}},
			})
			c.waitPodRunning(t, ns, name)
			ephemeral := func(container string, cond func(corev1.ContainerStatus) bool) {
				t.Helper()
				pollUntil(t, "ephemeral container "+container+" of "+name, "as expected",
					func() (*corev1.Pod, error) { return pods.Get(t.Context(), ns, name, metav1.GetOptions{}) },
					func(p *corev1.Pod) bool {
						for _, cs := range p.Status.EphemeralContainerStatuses {
							if cs.Name == container {
								return cond(cs)
							}
						}
						return false
					}, nil, func() string { return "" })
			}

			k.ok(t, "-n", ns, "debug", name, "--image=minik8s/busybox:1.0", "--target=app", "-c", "snapshot", "--attach=false", "--", "ps")
			ephemeral("snapshot", func(cs corev1.ContainerStatus) bool {
				return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			})
			if out := k.ok(t, "-n", ns, "logs", name, "-c", "snapshot").stdout; !strings.Contains(out, marker) {
				t.Fatalf("ps in the debug container does not show the target's %q:\n%s", marker, out)
			}

			r := runWithStdin(t, k, []byte("ps; exit\n"), "-n", ns, "debug", "-i", name, "--image=minik8s/busybox:1.0", "--target=app", "-c", "shell", "--", "sh")
			if r.err != nil || !strings.Contains(r.stdout, marker) {
				t.Fatalf("kubectl debug -i with ps typed in:\n%s", r)
			}
			ephemeral("shell", func(cs corev1.ContainerStatus) bool { return cs.State.Terminated != nil })

			// -it under a terminal: a shell prompt, ps, and kubectl's line once it ends.
			s := startInTerminal(t, k, 30, 100, "-n", ns, "debug", "-it", name, "--image=minik8s/busybox:1.0", "--target=app", "-c", "terminal")
			s.untilSeen(t, "a prompt", "\r", regexp.MustCompile(`# `))
			s.send(t, "ps\r")
			s.waitFor(t, "the target's process", regexp.MustCompile(regexp.QuoteMeta(marker)))
			s.send(t, "exit\r")
			if err := s.wait(t); err != nil || !strings.Contains(s.out.String(), "Session ended, the ephemeral container will not be restarted") {
				t.Fatalf("kubectl debug -it ended with %v:\n%q", err, s.out.String())
			}

			// Neither is started again, and the pod's own containers were left alone.
			p, err := pods.Get(t.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Spec.EphemeralContainers) != 3 || p.Status.ContainerStatuses[0].RestartCount != 0 || p.Status.Phase != corev1.PodRunning {
				t.Fatalf("pod after debugging: %d ephemeral containers, app restarts %d, phase %s",
					len(p.Spec.EphemeralContainers), p.Status.ContainerStatuses[0].RestartCount, p.Status.Phase)
			}
			// Names are unique across the pod's containers, with Kubernetes' message.
			if r := k.run(t, "-n", ns, "debug", name, "--image=minik8s/busybox:1.0", "-c", "app", "--attach=false"); r.err == nil {
				t.Fatalf("a debug container named as the app container was accepted:\n%s", r)
			}
		})
	}
}
