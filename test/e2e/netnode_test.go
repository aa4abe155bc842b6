package e2e

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestTwoNodes checks issue 4's "done means" on a real two-node cluster on this machine, built
// by the scripts make cluster runs (netcluster_harness_test.go): each node a network namespace
// with its own dockerd, Redis, kubelet and kubeproxy, and a real apiserver, scheduler
// (round-robin) and controller-manager on the host. The steps run in order: each starts from
// the cluster the previous one left.
func TestTwoNodes(t *testing.T) {
	c := startNetCluster(t, "a", "b")
	a := startNetNode(t, c, "a")
	b := startNetNode(t, c, "b")
	// Started once both nodes are Ready, so their first list already sees both. The lifecycle
	// timings are short so a lost node is handled in well under a minute; the grace period
	// still spans two of the kubelet's 10 s Lease renewals.
	c.startControlPlane(t,
		[]string{"--strategy", "roundrobin"},
		// The ReplicaSet controller is off: this test's ReplicaSet only owns pods it makes
		// itself (the drain steps name them).
		[]string{"--node-monitor-grace-period", "20s", "--pod-eviction-timeout", "5s", "--node-monitor-period", "1s",
			"--controllers", "*,-replicaset,-deployment,-daemonset"})
	nodes := map[string]*netNode{a.name: a, b.name: b}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("both nodes Ready with their own pod CIDRs", func(t *testing.T) {
		if a.cidr == b.cidr {
			t.Fatalf("both nodes got pod CIDR %s", a.cidr)
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "get", "nodes", "--no-headers").stdout
			for _, n := range []*netNode{a, b} {
				if row := rowOf(out, n.name); len(row) < 2 || row[1] != "Ready" {
					t.Errorf("%s kubectl get nodes: want %s Ready, got:\n%s", k.name, n.name, out)
				}
			}
		}
		for _, n := range []*netNode{a, b} {
			node, err := c.nodes.Get(t.Context(), "", n.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if node.Spec.PodCIDR != n.cidr || internalIP(node) != n.ip {
				t.Errorf("node %s: podCIDR %s InternalIP %s, want %s and %s", n.name, node.Spec.PodCIDR, internalIP(node), n.cidr, n.ip)
			}
		}
	})

	// The bare pods the round-robin step put on each node.
	placed := map[string][]string{}
	step("round-robin spreads 4 pods 2/2, each on its node's dockerd", func(t *testing.T) {
		names := []string{"rr-0", "rr-1", "rr-2", "rr-3"}
		for _, name := range names {
			c.createPod(t, sleeper(name))
		}
		for _, name := range names {
			p := c.waitPod(t, name, "Running with an IP", func(p *corev1.Pod) bool { return podRunning(p) && p.Status.PodIP != "" })
			n := nodes[p.Spec.NodeName]
			if n == nil {
				t.Fatalf("pod %s was bound to %q, not to a node of this test", name, p.Spec.NodeName)
			}
			placed[n.name] = append(placed[n.name], name)
			c.checkRunsOn(t, p, n)
		}
		if len(placed[a.name]) != 2 || len(placed[b.name]) != 2 {
			t.Errorf("pods per node %v, want 2 on each", placed)
		}
	})

	unschedulable := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
	step("a pod no node matches stays Pending and kubectl describe says why", func(t *testing.T) {
		p := sleeper("nowhere")
		p.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
		c.createPod(t, p)
		c.waitPod(t, "nowhere", "Unschedulable: "+unschedulable, func(p *corev1.Pod) bool {
			return p.Spec.NodeName == "" && scheduledMessage(p) == unschedulable
		})
		eventually(t, podTimeout, "a FailedScheduling event for nowhere", func() bool {
			evs, err := c.events.List(t.Context(), c.ns, metav1.ListOptions{FieldSelector: "involvedObject.name=nowhere"})
			if err != nil {
				return false
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedScheduling" && e.Message == unschedulable {
					return true
				}
			}
			return false
		})
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "describe", "pod", "nowhere", "-n", c.ns).stdout
			for _, want := range []string{"Pending", "FailedScheduling", unschedulable} {
				if !strings.Contains(out, want) {
					t.Errorf("%s kubectl describe pod nowhere: no %q in:\n%s", k.name, want, out)
				}
			}
		}
		if p, err := c.pods.Get(t.Context(), c.ns, "nowhere", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			t.Errorf("nowhere: want Pending and unbound, got %v", describePod(p, err))
		}
	})

	step("cordon: new pods all land on a; uncordon", func(t *testing.T) {
		if out := c.kubectl.ok(t, "cordon", b.name).stdout; strings.TrimSpace(out) != "node/"+b.name+" cordoned" {
			t.Errorf("kubectl cordon printed %q", out)
		}
		// The pending pod is retried on every node change: its message shows when the
		// scheduler has seen the cordon, before the new pods exist.
		c.waitPod(t, "nowhere", "rejected by a cordoned b", func(p *corev1.Pod) bool {
			return strings.Contains(scheduledMessage(p), "1 node(s) were unschedulable")
		})
		for _, name := range []string{"cordon-0", "cordon-1", "cordon-2"} {
			c.createPod(t, sleeper(name))
		}
		for _, name := range []string{"cordon-0", "cordon-1", "cordon-2"} {
			p := c.waitPod(t, name, "Running", podRunning)
			if p.Spec.NodeName != a.name {
				t.Errorf("pod %s went to %s while %s was cordoned", name, p.Spec.NodeName, b.name)
				continue
			}
			c.checkRunsOn(t, p, a)
		}
		if out := c.kubectl.ok(t, "uncordon", b.name).stdout; strings.TrimSpace(out) != "node/"+b.name+" uncordoned" {
			t.Errorf("kubectl uncordon printed %q", out)
		}
		c.waitPod(t, "nowhere", "rejected by its selector alone after the uncordon", func(p *corev1.Pod) bool {
			return scheduledMessage(p) == unschedulable
		})
	})

	var agent *corev1.Pod
	step("drain evicts b's pods that have an owner and cordons b", func(t *testing.T) {
		rs := c.createReplicaSet(t, "web")
		owned := []string{"web-0", "web-1"}
		for _, name := range owned {
			p := sleeper(name)
			p.Labels = map[string]string{"app": "web"}
			p.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)}
			p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: b.name}
			c.createPod(t, p)
		}
		// A DaemonSet's pod: drain --ignore-daemonsets leaves it where it is. The DaemonSet
		// exists (the garbage collector would take the pod of a missing one), and its
		// controller is off: this test places the pod itself.
		agentDS := c.createDaemonSet(t, "agent")
		ds := sleeper("agent-b")
		ds.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "DaemonSet", agentDS.Name, agentDS.UID)}
		ds.Spec.NodeName = b.name
		c.createPod(t, ds)
		for _, name := range append([]string{"agent-b"}, owned...) {
			p := c.waitPod(t, name, "Running", podRunning)
			if p.Spec.NodeName != b.name {
				t.Fatalf("pod %s went to %s, want %s", name, p.Spec.NodeName, b.name)
			}
			c.checkRunsOn(t, p, b)
		}
		ownedUIDs := map[string]string{}
		for _, name := range owned {
			ownedUIDs[name] = string(c.pod(t, name).UID)
		}

		// b still has the bare round-robin pods: like kubectl, drain refuses and evicts nothing.
		r := c.kubectl.run(t, "drain", b.name, "--ignore-daemonsets", "--grace-period", "1", "--timeout", "90s")
		if r.err == nil {
			t.Errorf("drain succeeded although %v on %s declare no controller:\n%s", placed[b.name], b.name, r)
		}
		for _, name := range placed[b.name] {
			if !strings.Contains(r.stderr, "cannot delete Pods that declare no controller") || !strings.Contains(r.stderr, c.ns+"/"+name) {
				t.Errorf("drain's error does not name the bare pod %s:\n%s", name, r)
			}
		}
		for _, name := range owned {
			if p := c.pod(t, name); p.DeletionTimestamp != nil {
				t.Errorf("the refused drain deleted %s", name)
			}
		}
		if !c.node(t, b.name).Spec.Unschedulable {
			t.Errorf("%s is not cordoned after the refused drain (drain cordons first)", b.name)
		}

		// Without them it goes through. The real kubectl waits until the pods are gone.
		c.kubectlReal.ok(t, append([]string{"delete", "pod", "-n", c.ns, "--grace-period", "1"}, placed[b.name]...)...)
		r = c.kubectl.ok(t, "drain", b.name, "--ignore-daemonsets", "--grace-period", "1", "--timeout", "90s")
		for _, want := range []string{"evicting pod " + c.ns + "/web-0", "evicting pod " + c.ns + "/web-1", "node/" + b.name + " drained"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("kubectl drain: no %q in:\n%s", want, r)
			}
		}
		if !strings.Contains(r.stderr, "ignoring DaemonSet-managed Pods: "+c.ns+"/agent-b") {
			t.Errorf("kubectl drain does not say it ignores agent-b:\n%s", r)
		}
		for _, name := range owned {
			if _, err := c.pods.Get(t.Context(), c.ns, name, metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
				t.Errorf("pod %s still in the API after the drain: %v", name, err)
			}
			if ids := strings.Fields(b.docker(t, "ps", "-aq", "--filter", "label="+labelPodUID+"="+ownedUIDs[name])); len(ids) > 0 {
				t.Errorf("containers of the evicted %s remain on %s's dockerd: %v", name, b.name, ids)
			}
		}
		agent = c.pod(t, "agent-b")
		if agent.DeletionTimestamp != nil || !podRunning(agent) {
			t.Errorf("the DaemonSet pod agent-b should be left running: %s", dump(agent.Status))
		}
		if !c.node(t, b.name).Spec.Unschedulable {
			t.Errorf("%s is not cordoned after the drain", b.name)
		}
	})

	step("a lost node goes Unknown, is tainted, and its pods are deleted after the toleration", func(t *testing.T) {
		c.kubectl.ok(t, "uncordon", b.name)
		lost := sleeper("lost")
		lost.Spec.NodeName = b.name
		c.createPod(t, lost)
		// Tolerating the taint for ever keeps a pod on the lost node.
		tolerant := sleeper("tolerant")
		tolerant.Spec.NodeName = b.name
		tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		c.createPod(t, tolerant)
		lostPod := c.waitPod(t, "lost", "Running", podRunning)
		c.waitPod(t, "tolerant", "Running", podRunning)

		b.killKubelet(t)
		c.waitNode(t, b.name, "Ready=Unknown with the unreachable NoExecute taint", func(n *corev1.Node) bool {
			return readyCondition(n) == corev1.ConditionUnknown && hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
		})
		if n := c.node(t, a.name); !nodeReady(n) || len(n.Spec.Taints) > 0 {
			t.Errorf("%s should stay Ready and untainted while %s is lost: %s", a.name, b.name, dump(n))
		}
		for _, name := range []string{"lost", "agent-b"} {
			c.waitPod(t, name, "marked for deletion", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
		}
		if p := c.pod(t, "tolerant"); p.DeletionTimestamp != nil {
			t.Errorf("tolerant tolerates the unreachable taint for ever but was deleted at %s", p.DeletionTimestamp)
		}
		onA, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range onA.Items {
			if p.DeletionTimestamp != nil {
				t.Errorf("pod %s on the healthy %s was marked for deletion", p.Name, a.name)
			}
		}
		// Nobody is left on b to stop them: the containers run on.
		if ids := b.containers(t, string(lostPod.UID)); len(ids) == 0 {
			t.Errorf("the lost pod's containers stopped on %s although no kubelet runs there", b.name)
		}
	})
}

func sleeper(name string) *corev1.Pod {
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: "minik8s/busybox:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1 & wait; done"},
			}},
		},
	}
}

func (c *netCluster) createPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	p.Namespace = c.ns
	if _, err := c.pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

func (c *netCluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := c.pods.Get(t.Context(), c.ns, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

func (c *netCluster) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := c.nodes.Get(t.Context(), "", name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

// createReplicaSet makes an owner for pods the test makes itself: it asks for no replicas, and
// the tests that use it run without the ReplicaSet controller.
func (c *netCluster) createReplicaSet(t *testing.T, name string) *appsv1.ReplicaSet {
	t.Helper()
	zero := int32(0)
	labels := map[string]string{"app": name}
	rs, err := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.cl).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: sleeper(name).Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicaset %s: %v", name, err)
	}
	return rs
}

func (c *netCluster) createDaemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": name}
	ds, err := client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](c.cl).Create(t.Context(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: sleeper(name).Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create daemonset %s: %v", name, err)
	}
	return ds
}

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

func newUID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// checkRunsOn checks that pod p runs on node n and nowhere else: its containers on n's
// dockerd only (not the other node's, not the host engine), its IP in n's pod CIDR and its
// hostIP n's address.
func (c *netCluster) checkRunsOn(t *testing.T, p *corev1.Pod, n *netNode) {
	t.Helper()
	uid := string(p.UID)
	// The sandbox and one container per spec container.
	if ids := n.containers(t, uid); len(ids) != len(p.Spec.Containers)+1 {
		t.Errorf("pod %s: %d running containers on %s's dockerd, want %d (sandbox included)", p.Name, len(ids), n.name, len(p.Spec.Containers)+1)
	}
	for _, other := range c.started {
		if other != n {
			if ids := strings.Fields(other.docker(t, "ps", "-aq", "--filter", "label="+labelPodUID+"="+uid)); len(ids) > 0 {
				t.Errorf("pod %s (bound to %s) has containers on %s's dockerd: %v", p.Name, n.name, other.name, ids)
			}
		}
	}
	if ids := strings.Fields(docker(t, "ps", "-aq", "--filter", "label="+labelPodUID+"="+uid)); len(ids) > 0 {
		t.Errorf("pod %s has containers on the host's Docker engine: %v", p.Name, ids)
	}
	_, cidr, err := net.ParseCIDR(n.cidr)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(p.Status.PodIP); ip == nil || !cidr.Contains(ip) {
		t.Errorf("pod %s: IP %q is not in %s's pod CIDR %s", p.Name, p.Status.PodIP, n.name, n.cidr)
	}
	if p.Status.HostIP != n.ip {
		t.Errorf("pod %s: hostIP %q, want %s's %s", p.Name, p.Status.HostIP, n.name, n.ip)
	}
}

// scheduledMessage is the message of the pod's PodScheduled=False condition, "" otherwise.
func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

func readyCondition(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func describePod(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("phase %s nodeName %q", p.Status.Phase, p.Spec.NodeName)
}
