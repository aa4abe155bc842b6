package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

// Bounds for the kubelet tests; generous because the machine is shared.
const (
	podTimeout     = 90 * time.Second
	kubeletStopMax = 45 * time.Second
	// Labels the kubelet puts on every container it creates (kubelet/internal/pods/spec).
	labelPodUID       = "minik8s.io/pod-uid"
	labelPodNamespace = "minik8s.io/pod-namespace"
	labelContainer    = "minik8s.io/container-name"
	// cniNetwork is the kubelet's CNI network name: host-local keeps its files under
	// <root-dir>/cni/networks/<cniNetwork>.
	cniNetwork = "minik8s"
)

// workloadImages are the local images the kubelet and in-cluster tests run.
var workloadImages = []string{"minik8s/pause:1.0", "minik8s/fileserver:1.0", "minik8s/busybox:1.0", inclusterImage}

var imagesOnce struct {
	once sync.Once
	err  error
}

// requireDocker fails the test when Docker does not answer and builds the workload images
// once when one is missing (there is no registry to pull them from).
func requireDocker(t *testing.T) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Fatalf("the test runs pods, and needs the Docker engine: docker info: %v\n%s", err, out)
	}
	imagesOnce.once.Do(func() {
		missing := false
		for _, img := range workloadImages {
			if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
				missing = true
			}
		}
		if !missing {
			return
		}
		cmd := exec.Command(filepath.Join("..", "..", "scripts", "images.sh"), "--if-missing")
		if out, err := cmd.CombinedOutput(); err != nil {
			imagesOnce.err = fmt.Errorf("scripts/images.sh --if-missing: %w\n%s", err, out)
		}
	})
	if imagesOnce.err != nil {
		t.Fatal(imagesOnce.err)
	}
}

// testNode is one kubelet process with its own apiserver, node name, bridge, pod CIDR, root
// directory, Redis keys and RabbitMQ queue, so it never collides with `make up`'s cluster.
type testNode struct {
	srv                  *apiserver
	name, bridge, cidr   string
	ns                   string // every test pod lives here; container cleanup filters on it
	rootDir, logPath     string
	port                 int
	pods                 *client.Typed[*corev1.Pod, *corev1.PodList]
	nodes                *client.Typed[*corev1.Node, *corev1.NodeList]
	cmd                  *exec.Cmd
	exited               chan struct{}
	waitErr              error
	kubectlReal, kubectl kubectl
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// freePodCIDR picks 10.244.<200..254>.0/24 that no address, route or iptables rule on this host uses yet,
// so the test's bridge cannot overlap make up's (10.244.0.0/24) or another run's.
func freePodCIDR(t *testing.T) string {
	t.Helper()
	var used bytes.Buffer
	for _, args := range [][]string{{"-4", "-o", "addr"}, {"-4", "route"}} {
		out, err := exec.CommandContext(t.Context(), "ip", args...).Output()
		if err != nil {
			t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
		}
		used.Write(out)
	}
	// Rules another run left for a CIDR would be blamed on this test's cleanup: skip those too.
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.CommandContext(t.Context(), "iptables-save", "-t", table).Output()
		if err != nil {
			t.Fatalf("iptables-save -t %s: %v", table, err)
		}
		used.Write(out)
	}
	start, err := rand.Int(rand.Reader, big.NewInt(55))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 55 {
		n := 200 + (int(start.Int64())+i)%55
		if !strings.Contains(used.String(), fmt.Sprintf("10.244.%d.", n)) {
			return fmt.Sprintf("10.244.%d.0/24", n)
		}
	}
	t.Fatal("no free 10.244.200-254.0/24 on this host")
	return ""
}

// startNode starts a private apiserver that knows the node, creates the Node with its pod
// CIDR and the test namespace, and starts the kubelet; everything is removed at cleanup.
func startNode(t *testing.T) *testNode {
	t.Helper()
	requireIntegration(t)
	requireDocker(t)
	id := randomHex(t, 4)
	n := &testNode{name: "e2e-" + id, bridge: "mk8se2e" + id[:4], ns: "kubelet-" + id, cidr: freePodCIDR(t)}

	srv, err := newAPIServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv.extraArgs = []string{"--nodes", n.name}
	srv.amqpURL = amqptest.VHost(t)
	if err := srv.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	n.port = ports[0]
	if n.rootDir, err = os.MkdirTemp("", "minik8s-e2e-kubelet-"); err != nil {
		t.Fatal(err)
	}
	n.logPath = filepath.Join(srv.home, "kubelet.log")
	// One cleanup for everything, in dependency order: pods first (the kubelet removes their
	// containers and IPs), then the kubelet, then what it leaves on the host by design.
	t.Cleanup(func() { n.cleanup(t) })

	cfg, err := client.FromKubeconfig(srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.pods = client.MustFor[*corev1.Pod, *corev1.PodList](cl)
	n.nodes = client.MustFor[*corev1.Node, *corev1.NodeList](cl)
	ks := kubectls(t, srv)
	n.kubectlReal, n.kubectl = ks[0], ks[1]

	// The Node exists before the kubelet starts, so it keeps this pod CIDR instead of being
	// given one next to make up's node.
	if _, err := n.nodes.Create(t.Context(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name},
		Spec:       corev1.NodeSpec{PodCIDR: n.cidr},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s with podCIDR %s: %v", n.name, n.cidr, err)
	}
	createNamespace(t, n.kubectlReal, n.ns)
	// What the controller-manager's root-ca-cert-publisher does on a whole cluster: pods'
	// ServiceAccount token volumes read the CA from this ConfigMap.
	n.kubectlReal.ok(t, "create", "configmap", "kube-root-ca.crt", "-n", n.ns,
		"--from-file=ca.crt="+filepath.Join(srv.home, "pki", "ca.crt"))
	n.start(t)
	return n
}

func (n *testNode) args() []string {
	return []string{
		"--node-name", n.name,
		"--node-ip", "127.0.0.1",
		"--address", "127.0.0.1",
		"--kubeconfig", filepath.Join(n.srv.home, "kubeconfigs", "node-"+n.name+".kubeconfig"),
		"--root-dir", n.rootDir,
		"--port", strconv.Itoa(n.port),
		"--cni-bridge", n.bridge,
		"--redis-addr", "127.0.0.1:6379",
		"--amqp-url", n.srv.amqpURL,
		"--pleg-period", "1s",
	}
}

// start runs the kubelet and waits until its Node is Ready (which needs the pod network).
func (n *testNode) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.kubelet, n.args()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start kubelet: %v", err)
	}
	n.cmd, n.exited, n.waitErr = cmd, make(chan struct{}), nil
	go func() {
		n.waitErr = cmd.Wait()
		_ = logf.Close()
		close(n.exited)
	}()
	n.waitNode(t, "Ready with its pod CIDR", func(node *corev1.Node) bool {
		return node.Spec.PodCIDR == n.cidr && nodeReady(node)
	})
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// stop sends SIGTERM and waits for a clean exit.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	if err := n.stopErr(); err != nil {
		t.Fatal(err)
	}
}

func (n *testNode) stopErr() error {
	if n.cmd == nil {
		return nil
	}
	select {
	case <-n.exited:
		return fmt.Errorf("kubelet had already exited: %v\nlast lines of its log:\n%s", n.waitErr, n.logTail(30))
	default:
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sigterm kubelet: %w", err)
	}
	select {
	case <-n.exited:
	case <-time.After(kubeletStopMax):
		_ = n.cmd.Process.Kill()
		<-n.exited
		return fmt.Errorf("kubelet did not exit within %s of SIGTERM; killed", kubeletStopMax)
	}
	if n.waitErr != nil {
		return fmt.Errorf("kubelet exited with %v after SIGTERM\nlast lines of its log:\n%s", n.waitErr, n.logTail(30))
	}
	return nil
}

func (n *testNode) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func (n *testNode) logTail(lines int) string {
	data, err := os.ReadFile(n.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// pollUntil calls get every 250 ms until cond holds on what it returns, and fails the test
// after podTimeout with the last error, the last object (or just its status, for a pod) and
// what diag adds. alive, when set, fails the test as soon as it reports an error.
func pollUntil[T any](t *testing.T, desc, what string, get func() (T, error), cond func(T) bool, alive func() error, diag func() string) T {
	t.Helper()
	var last T
	var lastErr error
	deadline := time.Now().Add(podTimeout)
	for time.Now().Before(deadline) {
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatalf("%v while waiting for %s to be %s\n%s", err, desc, what, diag())
			}
		}
		last, lastErr = get()
		if lastErr == nil && cond(last) {
			return last
		}
		sleep(t, 250*time.Millisecond)
	}
	var shown any = last
	if p, ok := any(last).(*corev1.Pod); ok && p != nil {
		shown = p.Status
	}
	t.Fatalf("%s not %s after %s: last error %v, last seen %s\n%s", desc, what, podTimeout, lastErr, dump(shown), diag())
	return last
}

// waitNode polls the Node until cond holds.
func (n *testNode) waitNode(t *testing.T, what string, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	return pollUntil(t, "node "+n.name, what,
		func() (*corev1.Node, error) { return n.nodes.Get(t.Context(), "", n.name, metav1.GetOptions{}) }, cond,
		func() error {
			if n.cmd != nil && !n.running() {
				return fmt.Errorf("kubelet exited (%v)", n.waitErr)
			}
			return nil
		}, n.logDiag)
}

// waitPod polls the pod until cond holds and returns it.
func (n *testNode) waitPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	return pollUntil(t, "pod "+name, what,
		func() (*corev1.Pod, error) { return n.pods.Get(t.Context(), n.ns, name, metav1.GetOptions{}) }, cond, nil, n.logDiag)
}

func (n *testNode) logDiag() string { return "last lines of the kubelet log:\n" + n.logTail(40) }

func sleep(t *testing.T, d time.Duration) {
	select {
	case <-t.Context().Done():
		t.Fatal("test ended while waiting")
	case <-time.After(d):
	}
}

func dump(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// podRunning is the kubectl "n/n Running" state: phase Running and every container running
// and ready.
func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil || !c.Ready {
			return false
		}
	}
	return true
}

func containerStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// applyTemplate renders testdata/<file> and applies it with the real kubectl. There is no
// scheduler: the templates bind their pods with nodeName {{.Suffix}}, the node's name.
func (n *testNode) applyTemplate(t *testing.T, file string) {
	t.Helper()
	path := render(t, t.TempDir(), file, manifest{Suffix: n.name, NS: n.ns, Rev: "1"})
	n.kubectlReal.ok(t, "apply", "-f", path)
}

// docker runs the docker CLI and returns its trimmed stdout; it fails the test on error.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), commandTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// containersOf lists the IDs of the pod's containers (sandbox included); all adds exited ones.
func containersOf(t *testing.T, uid string, all bool, extraFilters ...string) []string {
	t.Helper()
	args := []string{"ps", "-q", "--no-trunc", "--filter", "label=" + labelPodUID + "=" + uid}
	if all {
		args = append(args, "-a")
	}
	for _, f := range extraFilters {
		args = append(args, "--filter", f)
	}
	return strings.Fields(docker(t, args...))
}

// containerOf returns the one running container of the pod named name.
func containerOf(t *testing.T, uid, name string) string {
	t.Helper()
	ids := containersOf(t, uid, false, "label="+labelContainer+"="+name)
	if len(ids) != 1 {
		t.Fatalf("want one running container %q of pod %s, docker ps shows %v", name, uid, ids)
	}
	return ids[0]
}

// cleanup removes every trace of the node. Leftovers the kubelet should have removed itself
// are reported as errors and then removed anyway.
func (n *testNode) cleanup(t *testing.T) {
	ctx := context.WithoutCancel(t.Context())
	if n.running() && n.pods != nil {
		n.deleteAllPods(t, ctx)
	}
	if n.running() {
		if err := n.stopErr(); err != nil {
			t.Errorf("stop kubelet: %v", err)
		}
	}
	if t.Failed() && n.logPath != "" {
		t.Logf("last lines of the kubelet log:\n%s", n.logTail(60))
	}
	if n.ns != "" {
		out, _ := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label="+labelPodNamespace+"="+n.ns).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			t.Errorf("containers of the test pods left behind: %v (removing them)", ids)
			_ = exec.CommandContext(ctx, "docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	}
	if n.cidr != "" {
		n.cleanIptables(t, ctx)
	}
	if n.bridge != "" {
		if exec.CommandContext(ctx, "ip", "link", "show", n.bridge).Run() == nil {
			if out, err := exec.CommandContext(ctx, "ip", "link", "del", n.bridge).CombinedOutput(); err != nil {
				t.Errorf("ip link del %s: %v\n%s", n.bridge, err, out)
			}
		}
	}
	if n.rootDir != "" {
		if err := os.RemoveAll(n.rootDir); err != nil {
			t.Errorf("remove root dir: %v", err)
		}
	}
	if n.name != "" {
		n.deleteRedisKeys(t, ctx) // the queue goes with the test's vhost
	}
	if n.srv != nil {
		if err := n.srv.stop(); err != nil && !strings.Contains(err.Error(), "already exited") {
			t.Errorf("stop apiserver: %v", err)
		}
	}
}

// cleanIptables reports and removes rules that name an address of the pod CIDR (bridge's
// ipMasq in nat, the firewall plugin's CNI-FORWARD in filter) and the per-pod nat chains they
// jump to: any left means a CNI DEL was missed.
func (n *testNode) cleanIptables(t *testing.T, ctx context.Context) {
	prefix := strings.TrimSuffix(n.cidr, "0/24")
	chains := map[string]bool{}
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.CommandContext(ctx, "iptables-save", "-t", table).Output()
		if err != nil {
			t.Errorf("iptables-save -t %s: %v", table, err)
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, " "+prefix) {
				continue
			}
			f := strings.Fields(line)
			if table == "nat" && f[1] != "POSTROUTING" {
				chains[f[1]] = true
			}
			if i := slices.Index(f, "-j"); table == "nat" && i > 0 && i+1 < len(f) && strings.HasPrefix(f[i+1], "CNI-") {
				chains[f[i+1]] = true
			}
			t.Errorf("iptables %s rule left behind: %s (removing it)", table, line)
			// iptables-save quotes comments the way a shell does, so a shell re-reads the rule.
			del := "iptables -t " + table + " -D " + strings.TrimPrefix(line, "-A ")
			if out, err := exec.CommandContext(ctx, "sh", "-c", del).CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", del, err, out)
			}
		}
	}
	for c := range chains {
		_ = exec.CommandContext(ctx, "iptables", "-t", "nat", "-F", c).Run()
		_ = exec.CommandContext(ctx, "iptables", "-t", "nat", "-X", c).Run()
	}
}

// deleteAllPods deletes the test pods gracefully and waits until the kubelet has finalized
// them, which it does only after their containers and IPs are gone.
func (n *testNode) deleteAllPods(t *testing.T, ctx context.Context) {
	grace := int64(2)
	list, err := n.pods.List(ctx, n.ns, metav1.ListOptions{})
	if err != nil {
		t.Errorf("list test pods: %v", err)
		return
	}
	for _, p := range list.Items {
		if err := n.pods.Delete(ctx, n.ns, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("delete pod %s: %v", p.Name, err)
		}
	}
	deadline := time.Now().Add(podTimeout)
	for time.Now().Before(deadline) {
		list, err = n.pods.List(ctx, n.ns, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	var names []string
	if list != nil {
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
	}
	t.Errorf("the kubelet did not finalize the deleted pods within %s: %v (last error %v)", podTimeout, names, err)
}

// deleteRedisKeys removes the kubelet's cache (prefix minik8s:kubelet:<node>:) with redis-cli.
func (n *testNode) deleteRedisKeys(t *testing.T, ctx context.Context) {
	out, err := exec.CommandContext(ctx, "redis-cli", "-h", "127.0.0.1", "--scan", "--pattern", "minik8s:kubelet:"+n.name+":*").Output()
	if err != nil {
		t.Errorf("redis-cli --scan: %v", err)
		return
	}
	keys := strings.Fields(string(out))
	if len(keys) == 0 {
		return
	}
	if out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", "127.0.0.1", "del"}, keys...)...).CombinedOutput(); err != nil {
		t.Errorf("redis-cli del: %v\n%s", err, out)
	}
}
