package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// netNode is one node of a multi-node test, as scripts/node.sh made it: a network namespace on
// the cluster's bridge with its own containerd, dockerd, Redis, kubelet and kubeproxy, its
// state in <home>/nodes/<name>/.
type netNode struct {
	c          *netCluster
	name       string
	netns      string
	veth       string // host end; the namespace's end is eth0
	ip, cidr   string
	dir        string // the node's state, logs and pid files
	sock       string // dockerd's socket
	cgroup     string // dockerd's --cgroup-parent
	kubeletLog string
}

// startNetNode returns node short of the cluster: startNetCluster started it and waited until
// it was Ready.
func startNetNode(t *testing.T, c *netCluster, short string) *netNode {
	t.Helper()
	n, ok := c.byShort[short]
	if !ok {
		t.Fatalf("node %q was not declared to startNetCluster", short)
	}
	return n
}

// loadNode reads the node's record (node.sh writes node.env) and checks that its Node is
// Ready with a pod CIDR of the cluster's and the node's address.
func (c *netCluster) loadNode(t *testing.T, name string) *netNode {
	t.Helper()
	dir := filepath.Join(c.home, "nodes", name)
	data, err := os.ReadFile(filepath.Join(dir, "node.env"))
	if err != nil {
		t.Fatalf("node %s: %v", name, err)
	}
	rec := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			rec[k] = v
		}
	}
	n := &netNode{c: c, name: name, netns: rec["NODE_NETNS"], veth: rec["NODE_VETH"], ip: rec["NODE_IP"],
		cgroup: rec["NODE_CGROUP"], dir: dir, sock: filepath.Join(dir, "docker.sock"),
		kubeletLog: filepath.Join(dir, "logs", "kubelet.log")}
	if n.netns == "" || n.veth == "" || n.ip == "" {
		t.Fatalf("node %s: incomplete record %s:\n%s", name, filepath.Join(dir, "node.env"), data)
	}
	node := c.waitNode(t, name, "Ready with a pod CIDR and its InternalIP", func(node *corev1.Node) bool {
		return node.Spec.PodCIDR != "" && nodeReady(node) && internalIP(node) == n.ip
	})
	n.cidr = node.Spec.PodCIDR
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

// exec runs a command on the node (node.sh exec: its network namespace, its hosts file as
// /etc/hosts) and returns what it printed; it fails the test on error.
func (n *netNode) exec(t *testing.T, argv ...string) string {
	t.Helper()
	return n.c.nodeSh(t, append([]string{"exec", n.name, "--"}, argv...)...)
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

// killKubelet loses the node: SIGKILL (node.sh kill), so it neither renews its Lease nor says
// goodbye; its containers run on.
func (n *netNode) killKubelet(t *testing.T) {
	t.Helper()
	n.c.nodeSh(t, "kill", n.name, "kubelet")
}

// pids lists the pids in the node's pid files whose processes run.
func (n *netNode) pids(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(n.dir, "run", "*.pid"))
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid := strings.TrimSpace(string(data))
		if _, err := os.Stat(filepath.Join("/proc", pid)); err == nil {
			out = append(out, pid)
		}
	}
	return out
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
