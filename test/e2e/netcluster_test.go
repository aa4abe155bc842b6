package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// TestCluster checks what make cluster builds, through the scripts it runs (scripts/cluster.sh,
// scripts/node.sh): three nodes Ready with pod CIDRs of their own that this host routes to;
// node.sh exec inside the node's namespace; the pod network, Services, cluster DNS and Ingress
// across the nodes (networkingSteps); PersistentVolumes provisioned in the cluster's shared
// directory, written on one node and read on another (volumeSteps); a Function built on this
// host whose image reaches the nodes running its pods, called through the gateway and both
// kubectls with answers from several nodes, then deleted (serverlessSteps); node.sh stop/start and cut/restore taking a node NotReady
// and back; and cluster.sh down leaving no namespace, link, route, rule, process, mount,
// cgroup, state or broker vhost and user behind.
func TestCluster(t *testing.T) {
	c := startNetCluster(t, "1", "2", "3")
	// A lost node is Unknown 20 s after its last renewal (the kubelet renews every 10 s).
	c.startControlPlane(t, nil, []string{"--node-monitor-grace-period", "20s", "--node-monitor-period", "1s"})
	n1, n2, n3 := c.byShort["1"], c.byShort["2"], c.byShort["3"]
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("three nodes Ready with pod CIDRs of their own, routed from this host", func(t *testing.T) {
		_, network, err := net.ParseCIDR(c.clusterCIDR)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, n := range c.started {
			ip, _, err := net.ParseCIDR(n.cidr)
			if err != nil || !network.Contains(ip) {
				t.Errorf("node %s: pod CIDR %q is not in the cluster's %s", n.name, n.cidr, c.clusterCIDR)
			}
			if other, dup := seen[n.cidr]; dup {
				t.Errorf("nodes %s and %s both have pod CIDR %s", other, n.name, n.cidr)
			}
			seen[n.cidr] = n.name
			want := fmt.Sprintf("%s via %s dev %s", n.cidr, n.ip, c.bridge)
			if got := execOK(t, "ip", "-4", "route", "show", "exact", n.cidr); !strings.HasPrefix(got, want) {
				t.Errorf("this host's route to %s's pods: got %q, want %q", n.name, got, want)
			}
		}
		out := c.nodeSh(t, "list")
		for _, n := range c.started {
			row := rowOf(out, n.name)
			if len(row) != 5 || row[1] != n.ip || row[2] != "up" || row[3] != n.cidr || row[4] != "containerd,dockerd,redis,kubelet,kubeproxy" {
				t.Errorf("node.sh list: row of %s is %q, want its address, link up, pod CIDR and five processes:\n%s", n.name, row, out)
			}
		}
	})

	step("node.sh exec runs in the node's network namespace", func(t *testing.T) {
		for _, n := range c.started {
			fi, err := os.Stat(filepath.Join(netnsDir, n.netns))
			if err != nil {
				t.Fatal(err)
			}
			wantNS := fmt.Sprintf("net:[%d]", fi.Sys().(*syscall.Stat_t).Ino)
			out := n.exec(t, "sh", "-c", "readlink /proc/self/ns/net; hostname; ip -4 -o addr show dev eth0")
			lines := strings.SplitN(out, "\n", 3)
			if len(lines) < 3 || lines[0] != wantNS || lines[1] != n.name || !strings.Contains(lines[2], " "+n.ip+"/24 ") {
				t.Errorf("node.sh exec %s: want namespace %s, host name %s and eth0 with %s/24, got:\n%s", n.name, wantNS, n.name, n.ip, out)
			}
		}
	})

	step("this host reaches a pod on each node at its IP", func(t *testing.T) {
		for _, n := range c.started {
			p := sleeper("echo-" + n.name)
			p.Spec.NodeName = n.name
			p.Spec.Containers[0].Image, p.Spec.Containers[0].Command = "minik8s/echo:1.0", nil
			c.createPod(t, p)
		}
		hc := &http.Client{Timeout: 5 * time.Second}
		for _, n := range c.started {
			name := "echo-" + n.name
			p := c.waitPod(t, name, "Running with an IP", func(p *corev1.Pod) bool { return podRunning(p) && p.Status.PodIP != "" })
			var body string
			eventually(t, podTimeout, "an answer from "+name+" at "+p.Status.PodIP, func() bool {
				resp, err := hc.Get("http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				body = string(b)
				return err == nil && resp.StatusCode == http.StatusOK
			})
			if !strings.Contains(body, `"hostname": "`+name+`"`) {
				t.Errorf("%s at %s answered as someone else:\n%s", name, p.Status.PodIP, body)
			}
		}
	})

	step("pods on every node reach the API through the kubernetes Service with their token", func(t *testing.T) {
		api := &makeUpCluster{cl: c.cl} // the in-cluster helpers work over any cluster's client
		createLister(t, api, c.ns)
		for _, n := range c.started {
			p := goLister(c.ns, "incluster-"+n.name)
			p.Spec.NodeName = n.name
			c.createPod(t, p)
		}
		for _, n := range c.started {
			api.waitRound(t, c.ns, "incluster-"+n.name, "listing pods and refused secrets", 3*time.Minute,
				func(r inclusterRound) bool { return r.Pods >= len(c.started) && r.SecretsCode == http.StatusForbidden })
		}
	})

	c.networkingSteps(t, step, n1, n2, n3)
	c.volumeSteps(t, step, n1, n2)
	c.serverlessSteps(t, step)

	step("stop and cut take a node NotReady; start and restore bring it back", func(t *testing.T) {
		c.nodeSh(t, "stop", n2.name)
		if pids := n2.pids(t); len(pids) > 0 {
			t.Errorf("node.sh stop %s left processes %v", n2.name, pids)
		}
		if row := rowOf(c.nodeSh(t, "list"), n2.name); len(row) != 4 {
			t.Errorf("node.sh list after the stop: row of %s is %q, want no processes", n2.name, row)
		}
		c.nodeSh(t, "cut", n3.name)
		if link := execOK(t, "ip", "-o", "link", "show", n3.veth); strings.Contains(link, ",UP") {
			t.Errorf("%s's link is still up after node.sh cut: %s", n3.name, link)
		}
		if row := rowOf(c.nodeSh(t, "list"), n3.name); len(row) < 3 || row[2] != "cut" {
			t.Errorf("node.sh list after the cut: row of %s is %q, want link cut", n3.name, row)
		}
		for _, n := range []*netNode{n2, n3} {
			c.waitNode(t, n.name, "NotReady", func(node *corev1.Node) bool { return readyCondition(node) != corev1.ConditionTrue })
		}
		if node := c.node(t, n1.name); !nodeReady(node) {
			t.Errorf("%s went NotReady with the others: %s", n1.name, dump(node.Status.Conditions))
		}
		c.nodeSh(t, "start", n2.name)
		c.nodeSh(t, "restore", n3.name)
		for _, n := range []*netNode{n2, n3} {
			c.waitNode(t, n.name, "Ready again", nodeReady)
		}
		if len(n2.pids(t)) != 5 {
			t.Errorf("after node.sh start %s runs %v, want its five processes", n2.name, n2.pids(t))
		}
	})

	step("cluster.sh down leaves nothing behind", func(t *testing.T) {
		procs := map[string]string{} // pid -> command line, of every process the cluster ran
		var pidFiles []string
		for _, n := range c.started {
			f, _ := filepath.Glob(filepath.Join(n.dir, "run", "*.pid"))
			pidFiles = append(pidFiles, f...)
		}
		f, _ := filepath.Glob(filepath.Join(c.home, "run", "*.pid"))
		pidFiles = append(pidFiles, f...)
		for _, f := range pidFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pid := strings.TrimSpace(string(data))
			if cmd, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline")); err == nil {
				procs[pid] = string(cmd)
			}
		}
		if len(procs) != 3*5+4 {
			t.Errorf("before cluster.sh down: %d processes from %d pid files, want 19 (5 per node, apiserver, scheduler, controller-manager, serverless)", len(procs), len(pidFiles))
		}

		c.run(t, nil, "cluster.sh", "down")

		for pid, cmd := range procs {
			if now, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline")); err == nil && string(now) == cmd {
				t.Errorf("process %s still runs: %s", pid, strings.ReplaceAll(cmd, "\x00", " "))
			}
		}
		prefix := "mk8s-" + c.id
		if out := execOK(t, "ip", "netns", "list"); strings.Contains(out, prefix+"-") {
			t.Errorf("network namespaces left:\n%s", out)
		}
		if out := execOK(t, "ip", "-o", "link", "show"); strings.Contains(out, prefix) {
			t.Errorf("links left (bridge %s, veths %s-<n>):\n%s", c.bridge, prefix, out)
		}
		routes := execOK(t, "ip", "-4", "route", "show", "table", "all")
		for _, want := range append([]string{c.bridge, c.subnet}, n1.cidr, n2.cidr, n3.cidr) {
			if strings.Contains(routes, want) {
				t.Errorf("a route names %s:\n%s", want, routes)
			}
		}
		for _, table := range []string{"filter", "nat"} {
			if out := execOK(t, "iptables-save", "-t", table); strings.Contains(out, "minik8s cluster "+c.id) {
				t.Errorf("iptables rules of the cluster left in %s:\n%s", table, out)
			}
		}
		if m := mountsUnder(t, c.home); len(m) > 0 {
			t.Errorf("mounts left under %s: %v", c.home, m)
		}
		if out := execOK(t, "docker", "images", "-q", "--filter", "label=serverless.minik8s.io/cluster="+c.vhost); out != "" {
			t.Errorf("function images of the cluster left in this host's docker: %s", out)
		}
		cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/" + prefix + "-*")
		v2, _ := filepath.Glob("/sys/fs/cgroup/" + prefix + "-*")
		if left := slices.Concat(cgroups, v2); len(left) > 0 {
			t.Errorf("cgroups left: %v", left)
		}
		for _, d := range []string{"nodes", "cluster"} {
			if _, err := os.Stat(filepath.Join(c.home, d)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still there (%v)", filepath.Join(c.home, d), err)
			}
		}
		m := amqpbus.Management{URL: amqptest.ManagementURL()}
		for _, path := range []string{"/api/vhosts/" + c.vhost, "/api/users/" + c.vhost} {
			if _, err := m.Do(t.Context(), http.MethodGet, path, nil); !errors.Is(err, amqpbus.ErrNotFound) {
				t.Errorf("RabbitMQ %s: want 404 after cluster.sh down, got %v", path, err)
			}
		}
	})
}
