package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// netImages are the images the nodes' dockerds get from the host engine.
var netImages = []string{"minik8s/pause:1.0", "minik8s/busybox:1.0"}

// netNode is one node of a multi-node test: a network namespace on the cluster's bridge with
// its own containerd, dockerd, Redis and kubelet inside.
type netNode struct {
	name, netns    string
	veth           string // host end; the namespace's end is eth0
	ip, cidr       string
	dir            string // containerd's and dockerd's state, the kubelet's root, the logs
	sock           string // dockerd's socket
	cgroupParent   string
	containerd     *proc
	dockerd, redis *proc
	kubelet        *proc
	kubeletLog     string
}

// startNetNode makes node short (a name given to startNetCluster) and waits until its Node
// is Ready with the pod CIDR the cluster gave it.
func startNetNode(t *testing.T, c *netCluster, short string) *netNode {
	t.Helper()
	name, ok := c.names[short]
	if !ok {
		t.Fatalf("node %q was not declared to startNetCluster", short)
	}
	idx := len(c.started)
	n := &netNode{name: name, netns: "minik8s-e2e-" + c.id + "-" + short, veth: fmt.Sprintf("mk8sv%s%d", c.id, idx),
		ip: strings.TrimSuffix(c.subnet, "0/24") + strconv.Itoa(10+idx), cidr: c.cidrs[name], cgroupParent: "/minik8s-e2e-" + c.id + "-" + short}
	c.started = append(c.started, n)
	var err error
	if n.dir, err = os.MkdirTemp("", "minik8s-e2e-node-"); err != nil {
		t.Fatal(err)
	}
	n.sock = filepath.Join(n.dir, "docker.sock")
	t.Cleanup(func() { n.cleanup(t) })

	// The namespace and its link to the host bridge.
	execOK(t, "ip", "netns", "add", n.netns)
	execOK(t, "ip", "link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
	execOK(t, "ip", "link", "set", n.veth, "master", c.bridge, "up")
	execOK(t, "ip", "-n", n.netns, "link", "set", "lo", "up")
	execOK(t, "ip", "-n", n.netns, "addr", "add", n.ip+"/24", "dev", "eth0")
	execOK(t, "ip", "-n", n.netns, "link", "set", "eth0", "up")
	execOK(t, "ip", "-n", n.netns, "route", "add", "default", "via", c.hostIP)

	n.startDocker(t)
	n.loadImages(t)
	n.startRedis(t)
	n.kubeletLog = filepath.Join(n.dir, "kubelet.log")
	args := []string{bins.kubelet,
		"--node-name", n.name,
		"--node-ip", n.ip,
		"--address", n.ip,
		"--port", "10250",
		"--kubeconfig", filepath.Join(c.srv.home, "kubeconfigs", "node-"+n.name+".kubeconfig"),
		"--root-dir", filepath.Join(n.dir, "kubelet"),
		"--docker-host", "unix://" + n.sock,
		"--cni-bridge", "mk8spods0",
		"--redis-addr", "127.0.0.1:6379",
		"--amqp-url", c.nodeAMQP,
		"--pleg-period", "1s",
	}
	n.kubelet = startProc(t, "kubelet "+n.name, n.kubeletLog, n.netns, args...)
	c.waitNode(t, n.name, "Ready with its pod CIDR and InternalIP", func(node *corev1.Node) bool {
		return node.Spec.PodCIDR == n.cidr && nodeReady(node) && internalIP(node) == n.ip
	})
	return n
}

func internalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// startDocker runs the node's own containerd and dockerd in its namespace. With its own
// containerd (rather than the host's, which dockerd would pick up if one runs at
// /run/containerd) nothing of the node is visible to the host engine.
func (n *netNode) startDocker(t *testing.T) {
	t.Helper()
	ctrSock := filepath.Join(n.dir, "containerd.sock")
	ctrConfig := filepath.Join(n.dir, "containerd.toml")
	writeFile(t, ctrConfig, fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "containerd-state"), ctrSock, filepath.Join(n.dir, "containerd-opt")))
	n.containerd = startProc(t, "containerd "+n.name, filepath.Join(n.dir, "containerd.log"), n.netns, "containerd", "--config", ctrConfig)
	n.waitFor(t, n.containerd, "containerd's socket", func() bool {
		_, err := os.Stat(ctrSock)
		return err == nil
	})

	// The host engine's storage driver is the one known to work on this machine's disks.
	driver := execOK(t, "docker", "info", "--format", "{{.Driver}}")
	// An empty config file: the host's /etc/docker/daemon.json (hosts, data-root) is not ours.
	daemonJSON := filepath.Join(n.dir, "daemon.json")
	writeFile(t, daemonJSON, "{}\n")
	n.dockerd = startProc(t, "dockerd "+n.name, filepath.Join(n.dir, "dockerd.log"), n.netns, "dockerd",
		"--config-file", daemonJSON,
		"--data-root", filepath.Join(n.dir, "docker"),
		"--exec-root", filepath.Join(n.dir, "docker-exec"),
		"--pidfile", filepath.Join(n.dir, "docker.pid"),
		"-H", "unix://"+n.sock,
		"--containerd", ctrSock,
		"--containerd-namespace", "minik8s-e2e-"+n.name,
		"--containerd-plugins-namespace", "minik8s-e2e-"+n.name+"-plugins",
		"--exec-opt", "native.cgroupdriver=cgroupfs",
		"--cgroup-parent", n.cgroupParent,
		"--storage-driver", driver,
		// Pods use --network none and CNI: no docker0, no iptables rules from dockerd.
		"--bridge", "none",
		"--iptables=false",
		"--ip6tables=false",
	)
	n.waitFor(t, n.dockerd, "dockerd to answer", func() bool {
		return exec.CommandContext(t.Context(), "docker", "-H", "unix://"+n.sock, "version").Run() == nil
	})
}

// loadImages copies the images the pods use from the host engine: docker save | docker load.
func (n *netNode) loadImages(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `docker save "$@" | docker -H "$SOCK" load`, "sh")
	cmd.Args = append(cmd.Args, netImages...)
	cmd.Env = append(os.Environ(), "SOCK=unix://"+n.sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copy %v to %s's dockerd: %v\n%s", netImages, n.name, err, out)
	}
}

// startRedis runs the node's Redis on 127.0.0.1 of its namespace, without persistence.
func (n *netNode) startRedis(t *testing.T) {
	t.Helper()
	n.redis = startProc(t, "redis "+n.name, filepath.Join(n.dir, "redis.log"), n.netns, "redis-server",
		"--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no", "--dir", n.dir)
	n.waitFor(t, n.redis, "redis to answer PING", func() bool {
		out, err := exec.CommandContext(t.Context(), "nsenter", "--net="+filepath.Join(netnsDir, n.netns), "--",
			"redis-cli", "-h", "127.0.0.1", "-p", "6379", "ping").Output()
		return err == nil && strings.TrimSpace(string(out)) == "PONG"
	})
}

// waitFor polls cond while p runs.
func (n *netNode) waitFor(t *testing.T, p *proc, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for !cond() {
		if !p.running() {
			t.Fatalf("%s exited (%v) while waiting for %s\nlast lines of its log:\n%s", p.name, p.waitErr, what, tailFile(p.logPath, 30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s\nlast lines of the %s log:\n%s", what, readyTimeout, p.name, tailFile(p.logPath, 30))
		}
		sleep(t, 200*time.Millisecond)
	}
}

// docker runs the docker CLI against this node's dockerd.
func (n *netNode) docker(t *testing.T, args ...string) string {
	t.Helper()
	return execOK(t, append([]string{"docker", "-H", "unix://" + n.sock}, args...)...)
}

// containers lists the node's running containers of pod uid (sandbox included).
func (n *netNode) containers(t *testing.T, uid string) []string {
	t.Helper()
	return strings.Fields(n.docker(t, "ps", "-q", "--filter", "label="+labelPodUID+"="+uid))
}

// killKubelet loses the node: SIGKILL, so it neither renews its Lease nor says goodbye.
func (n *netNode) killKubelet() { n.kubelet.kill() }

// cleanup stops the node's processes and removes everything it made on the host. It runs
// after a failure too; each step goes on when an earlier one failed.
func (n *netNode) cleanup(t *testing.T) {
	ctx := context.WithoutCancel(t.Context())
	if t.Failed() && n.kubelet != nil {
		t.Logf("last lines of the kubelet %s log:\n%s", n.name, tailFile(n.kubeletLog, 40))
	}
	// A kubelet the test killed on purpose is not an error.
	if n.kubelet.running() {
		if err := n.kubelet.stop(); err != nil {
			t.Errorf("%v", err)
		}
	}
	if n.redis.running() {
		if err := n.redis.stop(); err != nil {
			t.Errorf("%v", err)
		}
	}
	if n.dockerd.running() {
		// The pods' containers go first, so dockerd has nothing to stop or unmount on exit.
		if out, err := execErr(ctx, "docker", "-H", "unix://"+n.sock, "ps", "-aq"); err != nil {
			t.Errorf("%v", err)
		} else if ids := strings.Fields(out); len(ids) > 0 {
			if _, err := execErr(ctx, append([]string{"docker", "-H", "unix://" + n.sock, "rm", "-f"}, ids...)...); err != nil {
				t.Errorf("%v", err)
			}
		}
		if err := n.dockerd.stop(); err != nil {
			t.Errorf("%v", err)
		}
	}
	if n.containerd.running() {
		if err := n.containerd.stop(); err != nil {
			t.Errorf("%v", err)
		}
	}
	if n.dir != "" {
		for _, m := range mountsUnder(t, n.dir) {
			if _, err := execErr(ctx, "umount", m); err != nil {
				if _, err := execErr(ctx, "umount", "-l", m); err != nil {
					t.Errorf("%v", err)
				}
			}
		}
	}
	removeCgroups(t, n.cgroupParent)
	if _, err := os.Stat(filepath.Join(netnsDir, n.netns)); err == nil {
		// Deleting the namespace deletes eth0 and so its peer on the bridge, the pod bridge
		// and the kubelet's iptables rules inside.
		if _, err := execErr(ctx, "ip", "netns", "del", n.netns); err != nil {
			t.Errorf("%v", err)
		}
	}
	if exec.CommandContext(ctx, "ip", "link", "show", n.veth).Run() == nil {
		if _, err := execErr(ctx, "ip", "link", "del", n.veth); err != nil {
			t.Errorf("%v", err)
		}
	}
	if n.dir != "" {
		if err := os.RemoveAll(n.dir); err != nil {
			t.Errorf("remove %s: %v", n.dir, err)
		}
	}
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(t *testing.T, dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// removeCgroups removes the node's --cgroup-parent from every hierarchy (v1 has one per
// controller, v2 one), children first; runc removed the containers' own cgroups already.
func removeCgroups(t *testing.T, parent string) {
	if parent == "" {
		return
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*" + parent)
	if fi, err := os.Stat("/sys/fs/cgroup" + parent); err == nil && fi.IsDir() {
		roots = append(roots, "/sys/fs/cgroup"+parent)
	}
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("remove cgroup %s: %v", dirs[i], err)
			}
		}
	}
}
