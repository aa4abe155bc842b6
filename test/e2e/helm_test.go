package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// helmVersion is the Helm the test builds from the Go module proxy; MINIK8S_HELM_VERSION
// picks another (e.g. "latest").
const helmVersion = "v3.22.0"

// helmBinary builds Helm from the module proxy once per version into the user's cache
// directory (outside the workspace, with Helm's own dependency versions) and returns its path.
func helmBinary(t *testing.T) string {
	t.Helper()
	version := helmVersion
	if v := os.Getenv("MINIK8S_HELM_VERSION"); v != "" {
		version = v
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "minik8s", "helm-"+version)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil && version != "latest" {
		return bin
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	t.Logf("building helm %s from the Go module proxy into %s", version, dir)
	cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install helm %s: %v\n%s", version, err, out)
	}
	return bin
}

// helmRunner returns a function that runs Helm against the cluster of kubeconfig, in a home
// of its own (so no repository or cache of the user's leaks in) that is also its working
// directory, and fails the test when Helm fails.
func helmRunner(t *testing.T, kubeconfig string) func(args ...string) string {
	t.Helper()
	helm := helmBinary(t)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"), "KUBECONFIG="+kubeconfig)
	return func(args ...string) string {
		t.Helper()
		// Not cancelled with the test, so a cleanup can uninstall a release.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*commandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env, cmd.Dir = env, home
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// The chart `helm create` makes, unmodified but for the image and port, installs (with
// Helm's OpenAPI validation), upgrades, rolls back and uninstalls, leaving nothing behind.
func TestHelmChartLifecycle(t *testing.T) {
	srv := sharedServer(t)
	run := helmRunner(t, srv.kubeconfig())
	run("create", "demo")
	ns := "helm-demo"
	k := kubectls(t, srv)[0]
	k.ok(t, "create", "namespace", ns)
	values := []string{"--set", "image.repository=minik8s/echo", "--set", "image.tag=1.0", "--set", "service.port=8080"}

	run(append([]string{"install", "demo", "./demo", "--namespace", ns}, values...)...)
	for _, obj := range []string{"deployment/demo", "service/demo", "serviceaccount/demo"} {
		k.ok(t, "get", obj, "-n", ns)
	}
	replicas := func() string {
		return strings.TrimSpace(k.ok(t, "get", "deployment/demo", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout)
	}
	if r := replicas(); r != "1" {
		t.Fatalf("installed with %s replicas", r)
	}
	if port := k.ok(t, "get", "service/demo", "-n", ns, "-o", "jsonpath={.spec.ports[0].port}").stdout; strings.TrimSpace(port) != "8080" {
		t.Fatalf("service port %q", port)
	}

	run(append([]string{"upgrade", "demo", "./demo", "--namespace", ns, "--set", "replicaCount=3"}, values...)...)
	if r := replicas(); r != "3" {
		t.Fatalf("upgraded to %s replicas, want 3", r)
	}
	run("rollback", "demo", "1", "--namespace", ns)
	if r := replicas(); r != "1" {
		t.Fatalf("rolled back to %s replicas, want 1", r)
	}
	checkRolledBack(t, run, "demo", ns)

	run("uninstall", "demo", "--namespace", ns)
	left := k.ok(t, "get", "all,serviceaccounts,secrets,configmaps", "-n", ns, "-o", "name").stdout
	for _, line := range strings.Fields(left) {
		if line != "serviceaccount/default" {
			t.Errorf("left behind after uninstall: %s", line)
		}
	}
}

// chartPath is the absolute path of a chart under testdata/helm.
func chartPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "helm", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRolledBack fails unless the release's last revision is the third, deployed as a
// rollback to the first.
func checkRolledBack(t *testing.T, helm func(args ...string) string, release, ns string) {
	t.Helper()
	var h []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(helm("history", release, "--namespace", ns, "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[2].Revision != 3 || h[2].Status != "deployed" || !strings.Contains(h[2].Description, "Rollback to 1") {
		t.Fatalf("helm history of %s: %+v, want revision 3 deployed as a rollback to 1", release, h)
	}
}

// TestHelmChartsOnNodes installs, upgrades, rolls back and uninstalls, with Helm's default
// validation, the two charts of testdata/helm written in the shape of public ones, on a
// two-node cluster made by the scripts: node-exporter (a DaemonSet on the nodes' network,
// answering at each node's address) and redis (a StatefulSet with claims whose replicas reach
// the primary by its stable name, headless and client Services, ConfigMaps, a budget and a
// network policy). Upgrades change a value that rolls the pods, rollbacks bring back the pods
// of the first template, and uninstalling leaves nothing but the claims, as Helm does.
func TestHelmChartsOnNodes(t *testing.T) {
	c := startNetCluster(t, "1", "2")
	c.startControlPlane(t, nil, nil)
	helm := helmRunner(t, c.srv.kubeconfig())
	nodes := map[string]string{} // name -> InternalIP
	for _, s := range []string{"1", "2"} {
		n := c.waitNode(t, c.names[s], "with an InternalIP", func(n *corev1.Node) bool { return nodeInternalIP(n) != "" })
		nodes[n.Name] = nodeInternalIP(n)
	}
	c.createPod(t, sleeper("helm-client"))
	c.waitPod(t, "helm-client", "Running", podRunning)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("node-exporter", func(t *testing.T) { testNodeExporterChart(t, c, helm, nodes) })
	step("redis", func(t *testing.T) { testRedisChart(t, c, helm) })
}

func nodeInternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// exporterReply is what minik8s/echo answers, in part.
type exporterReply struct {
	Hostname string `json:"hostname"`
	NodeName string `json:"nodeName"`
	Path     string `json:"path"`
}

func testNodeExporterChart(t *testing.T, c *netCluster, helm func(args ...string) string, nodes map[string]string) {
	const release = "ne"
	full := release + "-node-exporter"
	dss := client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](c.cl)
	// onEveryNode waits until each node runs exactly one ready pod of the release that cond
	// accepts, and returns them by node.
	onEveryNode := func(t *testing.T, what string, cond func(*corev1.Pod) bool) map[string]*corev1.Pod {
		t.Helper()
		var byNode map[string]*corev1.Pod
		pollUntil(t, "the pods of daemonset "+full, what, func() (*corev1.PodList, error) {
			return c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		}, func(l *corev1.PodList) bool {
			byNode = map[string]*corev1.Pod{}
			for i := range l.Items {
				p := &l.Items[i]
				if _, dup := byNode[p.Spec.NodeName]; dup || !podRunning(p) || p.DeletionTimestamp != nil || !cond(p) {
					return false
				}
				byNode[p.Spec.NodeName] = p
			}
			return len(byNode) == len(nodes)
		}, nil, c.kubeletTails)
		return byNode
	}
	// scrape reads /metrics at each node's address and port, from this host.
	hc := &http.Client{Timeout: 5 * time.Second}
	scrape := func(t *testing.T, port int) {
		t.Helper()
		for node, ip := range nodes {
			url := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(ip, strconv.Itoa(port)))
			var got exporterReply
			eventually(t, netTimeout, url+" answering for "+node, func() bool {
				resp, err := hc.Get(url)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				got = exporterReply{}
				return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&got) == nil && got.NodeName == node
			})
			if got.Path != "/metrics" {
				t.Errorf("%s answered %+v", url, got)
			}
		}
	}

	helm("install", release, chartPath(t, "node-exporter"), "--namespace", c.ns, "--wait", "--timeout", "4m")
	first := onEveryNode(t, "one ready pod on each node", func(*corev1.Pod) bool { return true })
	var rev1 string
	for node, p := range first {
		if !p.Spec.HostNetwork || !p.Spec.HostPID || p.Status.PodIP != nodes[node] || p.Status.HostIP != nodes[node] {
			t.Errorf("pod %s on %s: hostNetwork %v hostPID %v podIP %s hostIP %s, want the host's namespaces and the node's address %s",
				p.Name, node, p.Spec.HostNetwork, p.Spec.HostPID, p.Status.PodIP, p.Status.HostIP, nodes[node])
		}
		if p.Spec.ServiceAccountName != full {
			t.Errorf("pod %s runs as %q, want the chart's ServiceAccount %s", p.Name, p.Spec.ServiceAccountName, full)
		}
		rev1 = p.Labels[appsv1.ControllerRevisionHashLabelKey]
	}
	for _, obj := range []string{"serviceaccount/" + full, "service/" + full, "daemonset/" + full} {
		c.kubectl.ok(t, "-n", c.ns, "get", obj)
	}
	scrape(t, 9100)
	svcURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:9100/metrics", full, c.ns)
	pollUntil(t, "service "+full, "answering a pod", func() (string, error) {
		return c.inPod(t, c.kubectl, "helm-client", "timeout 3 wget -q -O- "+svcURL+" 2>&1 || true"), nil
	}, func(out string) bool {
		var got exporterReply
		return json.Unmarshal([]byte(out), &got) == nil && got.Path == "/metrics" && nodes[got.NodeName] != ""
	}, nil, func() string {
		return c.kubectl.run(t, "-n", c.ns, "get", "endpoints,endpointslices,services", "-o", "wide").String()
	})

	helm("upgrade", release, chartPath(t, "node-exporter"), "--namespace", c.ns, "--set", "service.port=9101", "--wait", "--timeout", "4m")
	second := onEveryNode(t, "replaced by pods listening on 9101", func(p *corev1.Pod) bool {
		return p.Labels[appsv1.ControllerRevisionHashLabelKey] != rev1
	})
	for node, p := range second {
		if p.UID == first[node].UID || p.Spec.Containers[0].Ports[0].ContainerPort != 9101 {
			t.Errorf("the pod on %s after the upgrade: %s with port %d", node, p.Name, p.Spec.Containers[0].Ports[0].ContainerPort)
		}
	}
	scrape(t, 9101)

	helm("rollback", release, "1", "--namespace", c.ns, "--wait", "--timeout", "4m")
	checkRolledBack(t, helm, release, c.ns)
	onEveryNode(t, "back on the first template", func(p *corev1.Pod) bool {
		return p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev1
	})
	scrape(t, 9100)
	pollUntil(t, "daemonset "+full, "rolled back with every pod available", func() (*appsv1.DaemonSet, error) {
		return dss.Get(t.Context(), c.ns, full, metav1.GetOptions{})
	}, func(ds *appsv1.DaemonSet) bool {
		st := ds.Status
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == 2 && st.UpdatedNumberScheduled == 2 && st.NumberAvailable == 2
	}, nil, c.kubeletTails)

	helm("uninstall", release, "--namespace", c.ns, "--wait", "--timeout", "2m")
	pollUntil(t, "the release's objects", "gone", func() (string, error) {
		r := c.kubectl.ok(t, "-n", c.ns, "get", "daemonsets,services,serviceaccounts,pods", "-l", "app.kubernetes.io/instance="+release, "-o", "name")
		return r.stdout, nil
	}, func(s string) bool { return strings.TrimSpace(s) == "" }, nil, c.kubeletTails)
}

func testRedisChart(t *testing.T, c *netCluster, helm func(args ...string) string) {
	const release = "cache"
	full, set, headless := release+"-redis", release+"-redis-node", release+"-redis-headless"
	sets := client.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](c.cl)
	pvcs := client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.cl)
	pdbs := client.MustFor[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](c.cl)
	selector := "app.kubernetes.io/instance=" + release
	names := []string{set + "-0", set + "-1", set + "-2"}
	// rolledTo waits until the three pods run one revision, which cond accepts, and returns it.
	rolledTo := func(t *testing.T, what string, cond func(rev string) bool) string {
		t.Helper()
		s := pollUntil(t, "statefulset "+set, what, func() (*appsv1.StatefulSet, error) {
			return sets.Get(t.Context(), c.ns, set, metav1.GetOptions{})
		}, func(s *appsv1.StatefulSet) bool {
			st := s.Status
			return st.ObservedGeneration == s.Generation && st.ReadyReplicas == 3 && st.UpdatedReplicas == 3 &&
				st.CurrentRevision == st.UpdateRevision && cond(st.UpdateRevision)
		}, nil, c.kubeletTails)
		for _, name := range names {
			p := c.pod(t, name)
			if got := p.Labels[appsv1.ControllerRevisionHashLabelKey]; got != s.Status.UpdateRevision || !podRunning(p) {
				t.Errorf("%s at revision %q (running %v), want %q", name, got, podRunning(p), s.Status.UpdateRevision)
			}
		}
		return s.Status.UpdateRevision
	}
	get := func(t *testing.T, pod, host, path string) string {
		t.Helper()
		return c.inPod(t, c.kubectl, pod, fmt.Sprintf("timeout 3 wget -q -O- http://%s:6379/%s", host, path))
	}
	configs := func(t *testing.T, want string) {
		t.Helper()
		for _, name := range names {
			if got := get(t, name, "127.0.0.1", "config"); !strings.Contains(got, want) {
				t.Errorf("%s's configuration lacks %q:\n%s", name, want, got)
			}
		}
	}

	helm("install", release, chartPath(t, "redis"), "--namespace", c.ns, "--wait", "--timeout", "5m")
	rev1 := rolledTo(t, "3 ready", func(string) bool { return true })
	for _, obj := range []string{"serviceaccount/" + full, "service/" + full, "service/" + headless, "configmap/" + full + "-configuration",
		"configmap/" + full + "-scripts", "configmap/" + full + "-health", "networkpolicy/" + full, "poddisruptionbudget/" + set} {
		c.kubectl.ok(t, "-n", c.ns, "get", obj)
	}
	if r := c.kubectlReal.ok(t, "-n", c.ns, "get", "service", headless, "-o", "jsonpath={.spec.clusterIP}"); r.stdout != "None" {
		t.Errorf("the headless Service's clusterIP is %q", r.stdout)
	}
	for _, name := range names {
		claim, err := pvcs.Get(t.Context(), c.ns, "redis-data-"+name, metav1.GetOptions{})
		if err != nil || claim.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim redis-data-%s: %v %s, want Bound", name, err, dump(claim))
		}
	}
	primary := strings.TrimSpace(get(t, names[0], "127.0.0.1", "first-start"))
	for i, name := range names {
		fqdn := name + "." + headless + "." + c.ns + ".svc.cluster.local"
		ip := c.pod(t, name).Status.PodIP
		eventually(t, netTimeout, fqdn+" resolving to "+ip, func() bool {
			return slices.Equal(answerAddrs(c.inPod(t, c.kubectl, "helm-client", "nslookup "+fqdn+" 2>&1 || true")), []string{ip})
		})
		role := "master"
		if i > 0 {
			role = "replica"
			if got := strings.TrimSpace(get(t, "helm-client", fqdn, "primary")); got != primary {
				t.Errorf("%s copied %q from the primary, which has %q", name, got, primary)
			}
		}
		if got := strings.TrimSpace(get(t, "helm-client", fqdn, "role")); got != role {
			t.Errorf("%s is %q, want %s", name, got, role)
		}
	}
	if got := strings.TrimSpace(get(t, "helm-client", full+"."+c.ns+".svc.cluster.local", "ping")); got != "PONG" {
		t.Errorf("the client Service answered %q", got)
	}
	pollUntil(t, "poddisruptionbudget "+set, "allowing one disruption of three", func() (*policyv1.PodDisruptionBudget, error) {
		return pdbs.Get(t.Context(), c.ns, set, metav1.GetOptions{})
	}, func(p *policyv1.PodDisruptionBudget) bool {
		st := p.Status
		return st.ObservedGeneration == p.Generation && st.ExpectedPods == 3 && st.CurrentHealthy == 3 && st.DesiredHealthy == 2 && st.DisruptionsAllowed == 1
	}, nil, c.kubeletTails)

	helm("upgrade", release, chartPath(t, "redis"), "--namespace", c.ns, "--set", "commonConfiguration=appendonly no", "--wait", "--timeout", "5m")
	rev2 := rolledTo(t, "rolled to a new revision", func(rev string) bool { return rev != rev1 })
	configs(t, "appendonly no")
	if got := strings.TrimSpace(get(t, names[0], "127.0.0.1", "first-start")); got != primary {
		t.Errorf("the primary has %q in its claim after the upgrade, want %q", got, primary)
	}

	helm("rollback", release, "1", "--namespace", c.ns, "--wait", "--timeout", "5m")
	checkRolledBack(t, helm, release, c.ns)
	rolledTo(t, "back on the first revision, "+rev1+" (not "+rev2+")", func(rev string) bool { return rev == rev1 })
	configs(t, "appendonly yes")

	helm("uninstall", release, "--namespace", c.ns, "--wait", "--timeout", "2m")
	pollUntil(t, "the release's objects", "gone but for the claims", func() (string, error) {
		r := c.kubectl.ok(t, "-n", c.ns, "get", "statefulsets,services,configmaps,serviceaccounts,poddisruptionbudgets,networkpolicies,controllerrevisions,pods,persistentvolumeclaims",
			"-l", selector, "-o", "name")
		return r.stdout, nil
	}, func(s string) bool {
		left := strings.Fields(s)
		slices.Sort(left)
		return slices.Equal(left, []string{"persistentvolumeclaim/redis-data-" + names[0], "persistentvolumeclaim/redis-data-" + names[1], "persistentvolumeclaim/redis-data-" + names[2]})
	}, nil, c.kubeletTails)
	for _, name := range names {
		if _, err := c.pods.Get(t.Context(), c.ns, name, metav1.GetOptions{}); err == nil {
			t.Errorf("pod %s left after the uninstall", name)
		}
	}

	var volumes []string
	for _, name := range names {
		claim, err := pvcs.Get(t.Context(), c.ns, "redis-data-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		volumes = append(volumes, claim.Spec.VolumeName)
	}
	c.kubectl.ok(t, "-n", c.ns, "delete", "pvc", "-l", selector)
	pvs := client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](c.cl)
	for _, v := range volumes {
		pollUntil(t, "persistentvolume "+v, "deleted with its claim", func() (error, error) {
			_, err := pvs.Get(t.Context(), "", v, metav1.GetOptions{})
			return err, nil
		}, func(err error) bool { return errors.Is(err, apierror.ErrNotFound) }, nil, c.kubeletTails)
	}
}
