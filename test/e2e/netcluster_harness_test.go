package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

// A multi-node test runs each node as DESIGN section 7 describes: a network namespace with a
// veth on a host bridge, and inside it the node's own containerd, dockerd, Redis and kubelet.
// The control plane (apiserver, scheduler, controller-manager) runs on the host and listens
// on the bridge address; everything the test makes is removed at cleanup.

const (
	netnsDir = "/var/run/netns"
	// procStopMax bounds a SIGTERM'd helper process; it is killed after that.
	procStopMax = 45 * time.Second
)

// The scheduler and controller-manager are built on first use, so the other e2e tests do not
// depend on those modules compiling.
var controlBins struct {
	once                         sync.Once
	scheduler, controllerManager string
	err                          error
}

func requireControlPlaneBinaries(t *testing.T) {
	t.Helper()
	requireBinaries(t)
	controlBins.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for _, b := range []struct {
			out *string
			pkg string
		}{
			{&controlBins.scheduler, "minik8s.io/scheduler/cmd/scheduler"},
			{&controlBins.controllerManager, "minik8s.io/controller/cmd/controller-manager"},
		} {
			path := filepath.Join(bins.dir, filepath.Base(b.pkg))
			if out, err := exec.CommandContext(ctx, "go", "build", "-o", path, b.pkg).CombinedOutput(); err != nil {
				controlBins.err = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
				return
			}
			*b.out = path
		}
	})
	if controlBins.err != nil {
		t.Fatal(controlBins.err)
	}
}

// requireNetTools fails the test unless it runs as root with what a namespaced node needs.
func requireNetTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the multi-node tests make network namespaces and run dockerd: run them as root")
	}
	for _, tool := range []string{"ip", "nsenter", "containerd", "dockerd", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the multi-node tests need %s on PATH: %v", tool, err)
		}
	}
}

// proc is one long-running process of a multi-node test, in a network namespace when netns
// is set. nsenter --net (not ip netns exec, which remounts /sys and hides the cgroups) execs
// the program, so the pid is the program's.
type proc struct {
	name, logPath string
	cmd           *exec.Cmd
	exited        chan struct{}
	waitErr       error
}

func startProc(t *testing.T, name, logPath, netns string, argv ...string) *proc {
	t.Helper()
	if netns != "" {
		argv = append([]string{"nsenter", "--net=" + filepath.Join(netnsDir, netns), "--"}, argv...)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C on the test does not hit it before cleanup stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	return p
}

func (p *proc) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits; a process that hangs is killed and reported. One that had
// already exited is reported too: nothing here is meant to exit on its own.
func (p *proc) stop() error {
	if p == nil {
		return nil
	}
	if !p.running() {
		return fmt.Errorf("%s had already exited: %v\nlast lines of its log:\n%s", p.name, p.waitErr, tailFile(p.logPath, 20))
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sigterm %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(procStopMax):
		p.kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.name, procStopMax)
	}
	var exit *exec.ExitError
	if p.waitErr != nil && (!errors.As(p.waitErr, &exit) || !exitedOnTerm(exit)) {
		return fmt.Errorf("%s exited with %v after SIGTERM\nlast lines of its log:\n%s", p.name, p.waitErr, tailFile(p.logPath, 20))
	}
	return nil
}

// exitedOnTerm accepts a process that died of the SIGTERM it was sent (redis-server and
// containerd may), as well as a clean exit.
func exitedOnTerm(exit *exec.ExitError) bool {
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// kill is SIGKILL and wait: a lost node, or the last resort.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// execOK runs a short command and fails the test with its output on error.
func execOK(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := execErr(t.Context(), argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func execErr(ctx context.Context, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// freeBlock picks <prefix>.<n>.0/24 for n in [from, from+count) that no address, route or
// iptables rule on this host names yet, and that is not among taken.
func freeBlock(t *testing.T, prefix string, from, count int, taken ...string) string {
	t.Helper()
	var used strings.Builder
	for _, args := range [][]string{{"ip", "-4", "-o", "addr"}, {"ip", "-4", "route"}, {"iptables-save", "-t", "nat"}, {"iptables-save", "-t", "filter"}} {
		used.WriteString(execOK(t, args...))
	}
	start := int(time.Now().UnixNano() % int64(count))
	for i := range count {
		n := from + (start+i)%count
		block := fmt.Sprintf("%s.%d.0/24", prefix, n)
		if !strings.Contains(used.String(), fmt.Sprintf("%s.%d.", prefix, n)) && !slices.Contains(taken, block) {
			return block
		}
	}
	t.Fatalf("no free %s.%d-%d.0/24 on this host", prefix, from, from+count-1)
	return ""
}

// netCluster is the host side of a multi-node test: a private RabbitMQ vhost and user, a
// bridge with its own /24, an apiserver listening on the bridge address, and the Nodes,
// created beforehand with their pod CIDRs.
type netCluster struct {
	id       string
	bridge   string // host bridge, mk8sb<id>
	subnet   string // its /24
	hostIP   string // the bridge's address: where the nodes reach the apiserver and RabbitMQ
	amqpURL  string // the test's vhost, for processes on the host
	nodeAMQP string // the same through the bridge address, for the nodes
	srv      *apiserver
	ns       string // namespace of the test's pods

	kubectlReal, kubectl kubectl
	nodes                *client.Typed[*corev1.Node, *corev1.NodeList]
	pods                 *client.Typed[*corev1.Pod, *corev1.PodList]
	events               *client.Typed[*corev1.Event, *corev1.EventList]
	cl                   *client.Client

	names   map[string]string // short name -> node name
	cidrs   map[string]string // node name -> pod CIDR
	started []*netNode
}

// startNetCluster prepares the host side for nodes named by short (e.g. "a", "b"); each
// node's name is mk8s-<id>-<short>.
func startNetCluster(t *testing.T, short ...string) *netCluster {
	t.Helper()
	requireIntegration(t)
	requireNetTools(t)
	requireDocker(t)
	id := randomHex(t, 4)
	c := &netCluster{id: id, bridge: "mk8sb" + id, ns: "multinode-" + id, names: map[string]string{}, cidrs: map[string]string{}}
	c.subnet = freeBlock(t, "10.199", 1, 254)
	c.hostIP = strings.TrimSuffix(c.subnet, "0/24") + "1"
	c.setUpBroker(t)

	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		if exec.CommandContext(ctx, "ip", "link", "show", c.bridge).Run() == nil {
			if _, err := execErr(ctx, "ip", "link", "del", c.bridge); err != nil {
				t.Errorf("%v", err)
			}
		}
	})
	execOK(t, "ip", "link", "add", c.bridge, "type", "bridge")
	execOK(t, "ip", "addr", "add", c.hostIP+"/24", "dev", c.bridge)
	execOK(t, "ip", "link", "set", c.bridge, "up")

	var nodeNames []string
	for _, s := range short {
		c.names[s] = "mk8s-" + id + "-" + s
		nodeNames = append(nodeNames, c.names[s])
	}
	srv, err := newAPIServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Bound to the bridge address, which is also in its serving certificate and kubeconfigs.
	srv.bindAddress, srv.amqpURL = c.hostIP, c.amqpURL
	srv.extraArgs = []string{"--nodes", strings.Join(nodeNames, ",")}
	if err := srv.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.srv = srv
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Errorf("stop apiserver: %v", err)
		}
		if t.Failed() {
			t.Logf("last lines of the apiserver log:\n%s", srv.logTail(30))
		}
	})

	cfg, err := client.FromKubeconfig(srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.cl, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	c.nodes = client.MustFor[*corev1.Node, *corev1.NodeList](c.cl)
	c.pods = client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	c.events = client.MustFor[*corev1.Event, *corev1.EventList](c.cl)
	ks := kubectls(t, srv)
	c.kubectlReal, c.kubectl = ks[0], ks[1]
	createNamespace(t, c.kubectlReal, c.ns)

	// Pod CIDRs outside make up's, so node routes could be added without overlap.
	var taken []string
	for _, name := range nodeNames {
		cidr := freeBlock(t, "10.244", 200, 55, taken...)
		taken = append(taken, cidr)
		c.cidrs[name] = cidr
		if _, err := c.nodes.Create(t.Context(), &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.NodeSpec{PodCIDR: cidr},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
	}
	return c
}

// setUpBroker makes a vhost and a user for this test through the management API. The
// guest user only logs in over loopback; the nodes come in through the bridge. Both are
// deleted at cleanup, with every queue the test declared.
func (c *netCluster) setUpBroker(t *testing.T) {
	t.Helper()
	base, err := url.Parse(amqptest.URL())
	if err != nil {
		t.Fatal(err)
	}
	vhost, user, pass := "minik8s-e2e-"+c.id, "minik8s-e2e-"+c.id, randomHex(t, 16)
	m := amqpbus.Management{URL: amqptest.ManagementURL()}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		if err := errors.Join(m.DeleteVHost(ctx, vhost), m.DeleteUser(ctx, user)); err != nil {
			t.Errorf("RabbitMQ cleanup: %v", err)
		}
	})
	if err := m.CreateUser(t.Context(), user, pass); err != nil {
		t.Fatalf("RabbitMQ management API (make up enables it): %v", err)
	}
	if err := m.CreateVHost(t.Context(), vhost, user); err != nil {
		t.Fatalf("RabbitMQ management API (make up enables it): %v", err)
	}
	u := *base
	u.User = url.UserPassword(user, pass)
	u.Path, u.RawPath = "/"+vhost, "/"+url.PathEscape(vhost)
	c.amqpURL = u.String()
	// A broker on this host's loopback is reached from the namespaces at the bridge address.
	if h := u.Hostname(); h == "127.0.0.1" || h == "localhost" || h == "::1" {
		port := u.Port()
		if port == "" {
			port = "5672"
		}
		u.Host = net.JoinHostPort(c.hostIP, port)
	}
	c.nodeAMQP = u.String()
}

// startControlPlane runs the scheduler and the controller-manager against the cluster, with
// the given extra flags; both are stopped at cleanup.
func (c *netCluster) startControlPlane(t *testing.T, schedulerArgs, controllerArgs []string) {
	t.Helper()
	requireControlPlaneBinaries(t)
	home := c.srv.home
	sched := startProc(t, "scheduler", filepath.Join(home, "scheduler.log"), "", append([]string{controlBins.scheduler,
		"--kubeconfig", filepath.Join(home, "kubeconfigs", "scheduler.kubeconfig"), "--amqp-url", c.amqpURL,
		"--leader-elect-identity", "e2e-" + c.id}, schedulerArgs...)...)
	cm := startProc(t, "controller-manager", filepath.Join(home, "controller-manager.log"), "", append([]string{controlBins.controllerManager,
		"--kubeconfig", filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"), "--amqp-url", c.amqpURL,
		"--leader-elect-identity", "e2e-" + c.id}, controllerArgs...)...)
	t.Cleanup(func() {
		for _, p := range []*proc{sched, cm} {
			if err := p.stop(); err != nil {
				t.Errorf("%v", err)
			}
			if t.Failed() {
				t.Logf("last lines of the %s log:\n%s", p.name, tailFile(p.logPath, 40))
			}
		}
	})
}

// waitNode polls the Node until cond holds.
func (c *netCluster) waitNode(t *testing.T, name, what string, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	return pollUntil(t, "node "+name, what,
		func() (*corev1.Node, error) { return c.nodes.Get(t.Context(), "", name, metav1.GetOptions{}) }, cond, nil, c.kubeletTails)
}

// waitPod polls a pod of the test namespace until cond holds.
func (c *netCluster) waitPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	return pollUntil(t, "pod "+name, what,
		func() (*corev1.Pod, error) { return c.pods.Get(t.Context(), c.ns, name, metav1.GetOptions{}) }, cond, nil, c.kubeletTails)
}

func (c *netCluster) kubeletTails() string {
	var b strings.Builder
	for _, n := range c.started {
		if n != nil && n.kubeletLog != "" {
			fmt.Fprintf(&b, "last lines of the kubelet %s log:\n%s\n", n.name, tailFile(n.kubeletLog, 15))
		}
	}
	return b.String()
}
