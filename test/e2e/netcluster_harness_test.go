package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

// A multi-node test builds its cluster with the scripts `make cluster` runs (scripts/cluster.sh
// and scripts/node.sh), so there is one way to make a node: each a network namespace with a
// veth on a host bridge, and inside it its own containerd, dockerd, Redis, kubelet and
// kubeproxy; the control plane on the host, listening on the bridge address. The test's
// cluster has a state directory, cluster id (so bridge, links, namespaces and cgroups), subnet,
// pod network, ports and RabbitMQ vhost and user of its own, so it never collides with make
// up's or make cluster's; `cluster.sh down` removes it at cleanup, after a failure too.

const (
	netnsDir = "/var/run/netns"
	// scriptTimeout bounds one cluster.sh or node.sh run (a node's start waits up to 90 s for
	// each of its processes).
	scriptTimeout = 10 * time.Minute
)

// scriptsDir is the repository's scripts/, absolute: the scripts run from anywhere.
var scriptsDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "scripts"))
	if err != nil {
		panic(err)
	}
	return d
}()

// The scheduler, controller-manager and kubeproxy are built on first use, so the other e2e
// tests do not depend on those modules compiling.
var controlBins struct {
	once sync.Once
	err  error
}

func requireControlPlaneBinaries(t *testing.T) {
	t.Helper()
	requireBinaries(t)
	controlBins.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for _, pkg := range []string{
			"minik8s.io/scheduler/cmd/scheduler",
			"minik8s.io/controller/cmd/controller-manager",
			"minik8s.io/kubeproxy/cmd/kubeproxy",
			"minik8s.io/serverless/cmd/serverless",
		} {
			path := filepath.Join(bins.dir, filepath.Base(pkg))
			if out, err := exec.CommandContext(ctx, "go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
				controlBins.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
				return
			}
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
	for _, tool := range []string{"ip", "nsenter", "unshare", "flock", "iptables", "curl", "containerd", "ctr", "dockerd", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the multi-node tests need %s on PATH (make up installs it): %v", tool, err)
		}
	}
	// The cluster's broker user and vhost are made through the management API.
	m := amqpbus.Management{URL: amqptest.ManagementURL()}
	if _, err := m.Do(t.Context(), http.MethodGet, "/api/overview", nil); err != nil {
		shown := m.URL
		if u, perr := url.Parse(m.URL); perr == nil {
			shown = u.Redacted()
		}
		t.Fatalf("the multi-node tests need RabbitMQ's management API at %s (make up enables it): %v", shown, err)
	}
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

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// usedIPv4 is every address, route and NAT/filter rule of this host, as text: a block whose
// prefix appears in it is taken.
func usedIPv4(t *testing.T) string {
	t.Helper()
	var used strings.Builder
	for _, args := range [][]string{{"ip", "-4", "-o", "addr"}, {"ip", "-4", "route", "show", "table", "all"}, {"iptables-save", "-t", "nat"}, {"iptables-save", "-t", "filter"}} {
		used.WriteString(execOK(t, args...))
	}
	return used.String()
}

// freeBlock picks <prefix>.<n>.0/<bits> for n = from + k*size (k < count), whose size /24s no
// address, route or iptables rule on this host names yet. The start is random, so two test
// processes rarely race for the same block.
func freeBlock(t *testing.T, prefix string, from, count, size int) string {
	t.Helper()
	used := usedIPv4(t)
	bits := 24
	for s := size; s > 1; s /= 2 {
		bits--
	}
	start := int(time.Now().UnixNano() % int64(count))
	for i := range count {
		n := from + ((start+i)%count)*size
		free := true
		for j := range size {
			if strings.Contains(used, fmt.Sprintf("%s.%d.", prefix, n+j)) {
				free = false
			}
		}
		if free {
			return fmt.Sprintf("%s.%d.0/%d", prefix, n, bits)
		}
	}
	t.Fatalf("no free %s.x.0/%d between %s.%d and %s.%d on this host", prefix, bits, prefix, from, prefix, from+count*size-1)
	return ""
}

// netCluster is a multi-node cluster built by the scripts for one test.
type netCluster struct {
	id          string // CLUSTER_ID: bridge mk8s-<id>, veths mk8s-<id>-<n>, namespaces mk8s-<id>-<node>
	home        string // its MINIK8S_HOME
	bridge      string
	subnet      string // the bridge's /24
	hostIP      string // the bridge's address: where the nodes reach the apiserver and RabbitMQ
	clusterCIDR string // the pod network the apiserver hands nodes /24s of
	vhost       string // its RabbitMQ vhost, also its user's name
	env         []string
	srv         *apiserver // only its home: the scripts run the apiserver
	ns          string     // namespace of the test's pods
	gateway     string     // the serverless gateway (host:port), once startServerless ran

	kubectlReal, kubectl kubectl
	nodes                *client.Typed[*corev1.Node, *corev1.NodeList]
	pods                 *client.Typed[*corev1.Pod, *corev1.PodList]
	events               *client.Typed[*corev1.Event, *corev1.EventList]
	cl                   *client.Client

	names   map[string]string   // short name -> node name
	byShort map[string]*netNode // short name -> node
	started []*netNode          // in the order the names were given
}

// scriptEnv are the settings the scripts read; the test's environment must not leak one in.
var scriptEnv = []string{"MINIK8S_HOME", "BIN_DIR", "NODES", "NODE_NAMES", "NODE_NAME", "NODE_PREFIX", "HOST_COMPONENTS",
	"HOST_KUBEPROXY", "AMQP_URL", "ADVERTISE_ADDRESS", "ETCD_SERVERS", "SERVICE_CIDR", "NETWORK_MODE", "GRACE",
	"SCHEDULER_STRATEGY", "KUBECONFIG_DIR", "APISERVER_", "ETCD_", "CLUSTER_", "RABBITMQ_", "KUBELET_", "KUBEPROXY_",
	"SCHEDULER_", "CONTROLLER_MANAGER_", "MINIK8S_MONITORING", "METRICS_HOST"}

func isScriptSetting(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	for _, s := range scriptEnv {
		if k == s || (strings.HasSuffix(s, "_") && strings.HasPrefix(k, s)) {
			return true
		}
	}
	return false
}

// startNetCluster starts the control plane's apiserver and nodes named by short (node-<short>)
// with scripts/cluster.sh up, and waits until every node is Ready. The scheduler and the
// controller-manager start with startControlPlane, once the nodes are there.
func startNetCluster(t *testing.T, short ...string) *netCluster {
	t.Helper()
	return startNetClusterWith(t, nil, short...)
}

// startNetClusterWith is startNetCluster with settings of the scripts (KEY=value) that every
// later run of them gets too; the monitoring stack stays out unless they say
// MINIK8S_MONITORING=1.
func startNetClusterWith(t *testing.T, settings []string, short ...string) *netCluster {
	t.Helper()
	requireIntegration(t)
	requireNetTools(t)
	requireDocker(t)
	requireControlPlaneBinaries(t)
	id := randomHex(t, 3)
	home, err := os.MkdirTemp("", "minik8s-e2e-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &netCluster{id: id, home: home, bridge: "mk8s-" + id, ns: "multinode-" + id,
		names: map[string]string{}, byShort: map[string]*netNode{}, srv: &apiserver{home: home}}
	c.subnet = freeBlock(t, "10.199", 1, 254, 1)
	c.hostIP = strings.TrimSuffix(c.subnet, "0/24") + "1"
	// A /21 (8 nodes) of make up's 10.244.0.0/16 that nothing here uses: a route to a test
	// node's pod CIDR never shadows make up's node or another test's.
	c.clusterCIDR = freeBlock(t, "10.244", 64, 16, 8)
	// The vhost (and user) are named after the cluster id file, so the broker shows them as a
	// test's.
	c.vhost = "minik8s-e2e-" + id
	writeFile(t, filepath.Join(home, "cluster-id"), "e2e-"+id)
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	broker, err := url.Parse(amqptest.URL())
	if err != nil {
		t.Fatal(err)
	}
	var nodeNames []string
	for _, s := range short {
		c.names[s] = "node-" + s
		nodeNames = append(nodeNames, c.names[s])
	}
	port := broker.Port()
	if port == "" {
		port = "5672"
	}
	for _, kv := range os.Environ() {
		if !isScriptSetting(kv) {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env,
		"MINIK8S_HOME="+home, "BIN_DIR="+bins.dir, "CLUSTER_ID="+id, "CLUSTER_SUBNET="+c.subnet,
		"CLUSTER_CIDR="+c.clusterCIDR, "APISERVER_PORT="+strconv.Itoa(ports[0]),
		"ETCD_CLIENT_PORT="+strconv.Itoa(ports[1]), "ETCD_PEER_PORT="+strconv.Itoa(ports[2]),
		"RABBITMQ_HOST="+broker.Hostname(), "RABBITMQ_PORT="+port, "RABBITMQ_API="+amqptest.ManagementURL(),
		// make up's kubeproxy (if any) owns this host's rules: the test's nodes have their own.
		"HOST_KUBEPROXY=0", "MINIK8S_MONITORING=0",
		"NODE_NAMES="+strings.Join(nodeNames, " "))
	c.env = append(c.env, settings...)

	// Registered before anything starts, so a failed start is cleaned up too.
	t.Cleanup(func() { c.cleanup(t) })
	c.run(t, []string{"HOST_COMPONENTS="}, "cluster.sh", "up")

	cfg, err := client.FromKubeconfig(c.srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.cl, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	c.nodes = client.MustFor[*corev1.Node, *corev1.NodeList](c.cl)
	c.pods = client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	c.events = client.MustFor[*corev1.Event, *corev1.EventList](c.cl)
	ks := kubectls(t, c.srv)
	c.kubectlReal, c.kubectl = ks[0], ks[1]
	for _, s := range short {
		n := c.loadNode(t, c.names[s])
		c.byShort[s] = n
		c.started = append(c.started, n)
	}
	createNamespace(t, c.kubectlReal, c.ns)
	return c
}

// run runs one of the scripts with the cluster's settings (and extra ones) and fails the test
// when it fails, with what it printed.
func (c *netCluster) run(t *testing.T, extraEnv []string, script string, args ...string) string {
	t.Helper()
	out, err := c.script(t.Context(), extraEnv, script, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

func (c *netCluster) script(ctx context.Context, extraEnv []string, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(scriptsDir, script), args...)
	cmd.Env = append(slices.Clone(c.env), extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("scripts/%s %s: %w", script, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// nodeSh runs scripts/node.sh with args and returns what it printed.
func (c *netCluster) nodeSh(t *testing.T, args ...string) string {
	t.Helper()
	return c.run(t, nil, "node.sh", args...)
}

// cleanup shows the logs of a failed test, then removes the cluster.
func (c *netCluster) cleanup(t *testing.T) {
	if t.Failed() {
		for _, p := range []string{"apiserver", "scheduler", "controller-manager", "serverless"} {
			if f := filepath.Join(c.home, "logs", p+".log"); fileExists(f) {
				t.Logf("last lines of the %s log:\n%s", p, tailFile(f, 30))
			}
		}
		t.Log(c.kubeletTails())
		for _, n := range c.started {
			if f := filepath.Join(n.dir, "logs", "kubeproxy.log"); fileExists(f) {
				t.Logf("last lines of the kubeproxy %s log:\n%s", n.name, tailFile(f, 15))
			}
		}
	}
	if out, err := c.script(t.Context(), nil, "cluster.sh", "down"); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	if err := os.RemoveAll(c.home); err != nil {
		t.Errorf("remove %s: %v", c.home, err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startControlPlane starts the scheduler and the controller-manager (cluster.sh up again,
// which finds the rest running) with the given extra flags; cluster.sh down stops them.
func (c *netCluster) startControlPlane(t *testing.T, schedulerArgs, controllerArgs []string) {
	t.Helper()
	c.run(t, []string{"HOST_COMPONENTS=scheduler controller-manager",
		"SCHEDULER_EXTRA_ARGS=" + strings.Join(schedulerArgs, " "),
		"CONTROLLER_MANAGER_EXTRA_ARGS=" + strings.Join(controllerArgs, " ")}, "cluster.sh", "up")
}

// startServerless starts the serverless component (cluster.sh up again with HOST_COMPONENTS
// serverless): function controller and builder on this host's Docker, gateway on the bridge
// address (c.gateway), calls counted in this host's Redis; cluster.sh down stops it.
func (c *netCluster) startServerless(t *testing.T) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), "docker", "image", "inspect", "--format", "{{.Id}}", runtimeImage).CombinedOutput(); err != nil {
		t.Fatalf("the function images' base %s is not in this host's Docker (make images builds it): %v\n%s", runtimeImage, err, out)
	}
	c.run(t, []string{"HOST_COMPONENTS=serverless"}, "cluster.sh", "up")
	c.gateway = net.JoinHostPort(c.hostIP, "8090")
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
