package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// TestKubelet checks issue 3's "Done means" against real processes: a private apiserver, the
// kubelet binary on Docker with CNI, and both kubectls. One kubelet serves every step; the
// steps run in order because later ones (kill, restart, delete) act on the pod the earlier
// ones started.
func TestKubelet(t *testing.T) {
	n := startNode(t)

	t.Run("node is Ready with capacity and podCIDR", func(t *testing.T) {
		for _, k := range []kubectl{n.kubectlReal, n.kubectl} {
			r := k.ok(t, "get", "nodes", "--no-headers")
			row := rowOf(r.stdout, n.name)
			if len(row) < 2 || row[1] != "Ready" {
				t.Errorf("%s kubectl get nodes: want %s Ready, got:\n%s", k.name, n.name, r.stdout)
			}
			var node corev1.Node
			if err := json.Unmarshal([]byte(k.ok(t, "get", "node", n.name, "-o", "json").stdout), &node); err != nil {
				t.Fatalf("%s kubectl get node -o json: %v", k.name, err)
			}
			if node.Spec.PodCIDR != n.cidr {
				t.Errorf("%s kubectl: podCIDR %q, want %q", k.name, node.Spec.PodCIDR, n.cidr)
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
				q, ok := node.Status.Capacity[res]
				if !ok || q.Sign() <= 0 {
					t.Errorf("%s kubectl: capacity %s = %v (present %v), want > 0", k.name, res, q.String(), ok)
				}
			}
		}
	})

	// The two-container pod the next steps use.
	n.applyTemplate(t, "kubelet-shared.yaml")
	pod := n.waitPod(t, "shared", "2/2 Running with an IP", func(p *corev1.Pod) bool {
		return podRunning(p) && p.Status.PodIP != ""
	})
	uid := string(pod.UID)
	want := "hello from shared in " + n.ns

	t.Run("two containers share localhost and a volume", func(t *testing.T) {
		for _, k := range []kubectl{n.kubectlReal, n.kubectl} {
			row := rowOf(k.ok(t, "get", "pod", "shared", "-n", n.ns, "--no-headers").stdout, "shared")
			if len(row) < 3 || row[1] != "2/2" || row[2] != "Running" {
				t.Errorf("%s kubectl get pod: want 2/2 Running, got %v", k.name, row)
			}
		}
		_, cidr, _ := net.ParseCIDR(n.cidr)
		if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !cidr.Contains(ip) {
			t.Errorf("pod IP %q is not in the node's podCIDR %s", pod.Status.PodIP, n.cidr)
		}
		// From the host, at the pod IP: the file server serves what the other container wrote.
		if got := httpGet(t, "http://"+net.JoinHostPort(pod.Status.PodIP, "8080")+"/hello.txt"); strings.TrimSpace(got) != want {
			t.Errorf("GET hello.txt from the host: %q, want %q", got, want)
		}
		// And the writer fetched it from the file server over 127.0.0.1.
		logs := n.kubectlReal.ok(t, "logs", "shared", "-c", "writer", "-n", n.ns).stdout
		if !strings.Contains(logs, "fetched over localhost: "+want) {
			t.Errorf("writer did not fetch the file over localhost; its log:\n%s", logs)
		}
	})

	t.Run("kubectl logs and logs -f", func(t *testing.T) {
		for _, k := range []kubectl{n.kubectlReal, n.kubectl} {
			logs := k.ok(t, "logs", "shared", "-c", "writer", "-n", n.ns).stdout
			if !strings.Contains(logs, "fetched over localhost: ") {
				t.Errorf("%s kubectl logs: want the writer's output, got:\n%s", k.name, logs)
			}
			last := maxTick(logs)
			// Follow must deliver a line written after the plain read; then it is stopped.
			ctx, cancel := context.WithCancel(t.Context())
			var out, errOut lockedBuffer
			cmd := k.command(ctx, "logs", "-f", "shared", "-c", "writer", "-n", n.ns)
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				cancel()
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for maxTick(out.String()) <= last && time.Now().Before(deadline) {
				sleep(t, 200*time.Millisecond)
			}
			got := maxTick(out.String())
			cancel()
			_ = cmd.Wait()
			if got <= last {
				t.Errorf("%s kubectl logs -f streamed nothing newer than tick %d within 60s\nstdout:\n%s\nstderr:\n%s",
					k.name, last, out.String(), errOut.String())
			}
		}
	})

	t.Run("limits reach docker", func(t *testing.T) {
		id := containerOf(t, uid, "writer")
		var hc struct {
			NanoCpus, CpuQuota, CpuPeriod, Memory int64 //nolint:revive // Docker's names
		}
		if err := json.Unmarshal([]byte(docker(t, "inspect", "-f", "{{json .HostConfig}}", id)), &hc); err != nil {
			t.Fatal(err)
		}
		cpuOK := hc.NanoCpus == 500_000_000 || (hc.CpuPeriod > 0 && hc.CpuQuota*2 == hc.CpuPeriod)
		if !cpuOK {
			t.Errorf("cpu limit 500m: NanoCpus %d, CpuQuota %d, CpuPeriod %d", hc.NanoCpus, hc.CpuQuota, hc.CpuPeriod)
		}
		if hc.Memory != 64<<20 {
			t.Errorf("memory limit 64Mi: Memory %d, want %d", hc.Memory, 64<<20)
		}
	})

	t.Run("a killed container comes back", func(t *testing.T) {
		killed := containerOf(t, uid, "files")
		before, _ := containerStatus(pod, "files")
		docker(t, "kill", killed)
		p := n.waitPod(t, "shared", "restarted after docker kill", func(p *corev1.Pod) bool {
			s, ok := containerStatus(p, "files")
			return ok && s.RestartCount > before.RestartCount && s.State.Running != nil && podRunning(p)
		})
		s, _ := containerStatus(p, "files")
		if s.LastTerminationState.Terminated == nil {
			t.Errorf("lastState.terminated not set after the kill: %s", dump(s))
		} else if s.LastTerminationState.Terminated.ContainerID != "" && !strings.HasSuffix(s.LastTerminationState.Terminated.ContainerID, killed) {
			t.Errorf("lastState.terminated is container %s, want the killed %s", s.LastTerminationState.Terminated.ContainerID, killed)
		}
		if now := containerOf(t, uid, "files"); now == killed {
			t.Errorf("the killed container %s is running again instead of a new one", killed)
		}
		// The emptyDir outlives the container.
		if got := httpGet(t, "http://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/hello.txt"); strings.TrimSpace(got) != want {
			t.Errorf("after the restart hello.txt is %q, want %q", got, want)
		}
		pod = p
	})

	t.Run("a restarted kubelet changes nothing that runs", func(t *testing.T) {
		p := n.waitPod(t, "shared", "2/2 Running", podRunning)
		idsBefore := containersOf(t, uid, false)
		allBefore := containersOf(t, uid, true)
		counts := restartCounts(p)
		n.stop(t)
		if got := containersOf(t, uid, false); !sameSet(got, idsBefore) {
			t.Errorf("containers changed while the kubelet was down: %v, before %v", got, idsBefore)
		}
		n.start(t)
		// A new pod running shows the new kubelet has synced with the API and Docker.
		n.applyTemplate(t, "kubelet-sleeper.yaml")
		n.waitPod(t, "sleeper", "Running after the kubelet restart", podRunning)
		after, err := n.pods.Get(t.Context(), n.ns, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := containersOf(t, uid, false); !sameSet(got, idsBefore) {
			t.Errorf("running containers after the restart: %v, want the same as before %v", got, idsBefore)
		}
		for _, id := range containersOf(t, uid, true) {
			if !slices.Contains(allBefore, id) {
				t.Errorf("container %s was created after the kubelet restart", id)
			}
		}
		if diff := cmp.Diff(counts, restartCounts(after)); diff != "" {
			t.Errorf("restartCount changed across the kubelet restart (-before +after):\n%s", diff)
		}
		if !podRunning(after) {
			t.Errorf("pod not Running after the kubelet restart: %s", dump(after.Status))
		}
	})

	t.Run("deleting the pod cleans up fully", func(t *testing.T) {
		p, err := n.pods.Get(t.Context(), n.ns, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ipFile := filepath.Join(n.rootDir, "cni", "networks", cniNetwork, p.Status.PodIP)
		if _, err := os.Stat(ipFile); err != nil {
			t.Fatalf("host-local's file for the pod IP should exist before the delete: %v", err)
		}
		if len(containersOf(t, uid, true)) == 0 {
			t.Fatal("no containers of the pod before the delete")
		}
		// Default grace; the real kubectl waits until the pod is gone.
		n.kubectlReal.ok(t, "delete", "pod", "shared", "-n", n.ns)
		if _, err := n.pods.Get(t.Context(), n.ns, "shared", metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("pod still in the API after kubectl delete: %v", err)
		}
		if ids := containersOf(t, uid, true); len(ids) > 0 {
			t.Errorf("containers of the deleted pod remain: %v", ids)
		}
		if _, err := os.Stat(ipFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the pod IP %s is still allocated (%s): %v", p.Status.PodIP, ipFile, err)
		}
	})

	t.Run("restartPolicy Never fails and OnFailure succeeds", func(t *testing.T) {
		n.applyTemplate(t, "kubelet-exit.yaml")
		for _, tc := range []struct {
			pod   string
			phase corev1.PodPhase
			exit  int32
		}{
			{"never-fails", corev1.PodFailed, 3},
			{"onfailure-succeeds", corev1.PodSucceeded, 0},
		} {
			t.Run(tc.pod, func(t *testing.T) {
				p := n.waitPod(t, tc.pod, string(tc.phase), func(p *corev1.Pod) bool { return p.Status.Phase == tc.phase })
				s, ok := containerStatus(p, "main")
				if !ok || s.State.Terminated == nil {
					t.Fatalf("want a terminated container status, got %s", dump(p.Status))
				}
				if s.State.Terminated.ExitCode != tc.exit || s.RestartCount != 0 {
					t.Errorf("exit code %d restartCount %d, want %d and 0", s.State.Terminated.ExitCode, s.RestartCount, tc.exit)
				}
			})
		}
	})

	t.Run("configMaps and secrets reach env and volumes", func(t *testing.T) {
		n.applyTemplate(t, "kubelet-config.yaml")
		n.waitPod(t, "configured", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		out := n.kubectl.ok(t, "logs", "configured", "-n", n.ns).stdout
		if want := "env=hello-from-configmap file=hello-from-configmap secret=s3cret"; strings.TrimSpace(out) != want {
			t.Errorf("logs %q, want %q", out, want)
		}
	})

	t.Run("an image that does not exist", func(t *testing.T) {
		n.applyTemplate(t, "kubelet-badimage.yaml")
		reasons := []string{"ErrImagePull", "ImagePullBackOff"}
		n.waitPod(t, "bad-image", "waiting on the image", func(p *corev1.Pod) bool {
			s, ok := containerStatus(p, "main")
			return ok && s.State.Waiting != nil && slices.Contains(reasons, s.State.Waiting.Reason)
		})
		for _, k := range []kubectl{n.kubectlReal, n.kubectl} {
			row := rowOf(k.ok(t, "get", "pod", "bad-image", "-n", n.ns, "--no-headers").stdout, "bad-image")
			if len(row) < 3 || !slices.Contains(reasons, row[2]) {
				t.Errorf("%s kubectl get pod: STATUS want one of %v, row %v", k.name, reasons, row)
			}
		}
	})
}

// rowOf returns the whitespace-separated fields of the table row whose first field is name.
func rowOf(table, name string) []string {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

var tickRE = regexp.MustCompile(`(?m)^tick (\d+)$`)

// maxTick is the highest "tick N" in the writer's log, 0 if none.
func maxTick(log string) int {
	best := 0
	for _, m := range tickRE.FindAllStringSubmatch(log, -1) {
		if v, err := strconv.Atoi(m[1]); err == nil && v > best {
			best = v
		}
	}
	return best
}

// httpGet fetches url from the host and returns the body; it fails the test unless 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	code, body := httpAnswer(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", url, code, body)
	}
	return body
}

func restartCounts(p *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, s := range p.Status.ContainerStatuses {
		out[s.Name] = s.RestartCount
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
