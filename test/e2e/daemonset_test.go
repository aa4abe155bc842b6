package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// TestDaemonSet runs the documentation's fluentd-elasticsearch DaemonSet
// (testdata/docs/daemonset.yaml, in kube-system as written), applied with each kubectl in
// turn, on a three-node cluster made by the scripts: a running pod on every node, the one
// tainted as a control-plane node included, one more on a node added with scripts/node.sh
// add, and a rollout, its history and its undo through the real kubectl and ours.
func TestDaemonSet(t *testing.T) {
	c := startNetCluster(t, "a", "b", "c")
	c.startControlPlane(t, nil, nil)
	dss := client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](c.cl)
	const name, ns = "fluentd-elasticsearch", "kube-system"
	manifest := filepath.Join("testdata", "docs", "daemonset.yaml")
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	// running waits until exactly one running pod of the DaemonSet is on each of nodes, and
	// returns them by node.
	running := func(t *testing.T, what string, nodes ...string) map[string]*corev1.Pod {
		t.Helper()
		var byNode map[string]*corev1.Pod
		pollUntil(t, "daemonset "+name, what, func() (map[string]*corev1.Pod, error) {
			list, err := c.pods.List(t.Context(), ns, metav1.ListOptions{LabelSelector: "name=" + name})
			if err != nil {
				return nil, err
			}
			byNode = map[string]*corev1.Pod{}
			for i := range list.Items {
				p := &list.Items[i]
				if p.DeletionTimestamp != nil {
					continue
				}
				if _, dup := byNode[p.Spec.NodeName]; dup || !podRunning(p) {
					return nil, nil
				}
				byNode[p.Spec.NodeName] = p
			}
			return byNode, nil
		}, func(got map[string]*corev1.Pod) bool {
			if len(got) != len(nodes) {
				return false
			}
			for _, n := range nodes {
				if got[n] == nil {
					return false
				}
			}
			return true
		}, nil, c.kubeletTails)
		return byNode
	}
	nodes := []string{c.names["a"], c.names["b"], c.names["c"]}

	step("the documentation's DaemonSet applied by either kubectl runs a pod on every node", func(t *testing.T) {
		// The example tolerates the control-plane taint, so a node that has it gets its pod too.
		c.kubectlReal.ok(t, "taint", "node", c.names["a"], "node-role.kubernetes.io/control-plane:NoSchedule")
		for i, k := range []kubectl{c.kubectlReal, c.kubectl} {
			if out := k.ok(t, "apply", "-f", manifest).stdout; !strings.Contains(out, "daemonset.apps/"+name+" created") {
				t.Errorf("%s kubectl apply:\n%s", k.name, out)
			}
			pods := running(t, "a running pod on each of the three nodes", nodes...)
			for n, p := range pods {
				if p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" {
					t.Errorf("pod %s on %s has no %s label", p.Name, n, appsv1.ControllerRevisionHashLabelKey)
				}
			}
			r := k.ok(t, "-n", ns, "rollout", "status", "daemonset/"+name, "--timeout", "3m")
			if !strings.Contains(r.stdout, fmt.Sprintf("daemon set %q successfully rolled out", name)) {
				t.Errorf("%s kubectl rollout status:\n%s", k.name, r)
			}
			for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
				out := k.ok(t, "-n", ns, "get", "ds", name).stdout
				if row := rowOf(out, name); len(row) < 7 || row[1] != "3" || row[2] != "3" || row[3] != "3" || row[4] != "3" || row[5] != "3" || row[6] != "<none>" {
					t.Errorf("%s kubectl get ds: want 3 desired, current, ready, up-to-date, available and no node selector:\n%s", k.name, out)
				}
			}
			if i == 0 {
				k.ok(t, "delete", "-f", manifest)
				pollUntil(t, "the pods of daemonset "+name, "gone with it", func() (*corev1.PodList, error) {
					return c.pods.List(t.Context(), ns, metav1.ListOptions{LabelSelector: "name=" + name})
				}, func(l *corev1.PodList) bool { return len(l.Items) == 0 }, nil, c.kubeletTails)
			}
		}
	})

	step("a node added with node.sh add gets its pod", func(t *testing.T) {
		added := "node-d"
		c.nodeSh(t, "add", added)
		c.started = append(c.started, c.loadNode(t, added))
		running(t, "a running pod on each of the four nodes", append(nodes, added)...)
		pollUntil(t, "daemonset "+name, "status of four nodes", func() (*appsv1.DaemonSet, error) {
			return dss.Get(t.Context(), ns, name, metav1.GetOptions{})
		}, func(ds *appsv1.DaemonSet) bool {
			st := ds.Status
			return st.DesiredNumberScheduled == 4 && st.CurrentNumberScheduled == 4 && st.NumberReady == 4 && st.NumberAvailable == 4 && st.NumberMisscheduled == 0
		}, nil, c.kubeletTails)
		nodes = append(nodes, added)
	})

	step("a rollout, its history and its undo", func(t *testing.T) {
		before := running(t, "the pods before the rollout", nodes...)
		c.kubectlReal.ok(t, "-n", ns, "set", "env", "daemonset/"+name, "ROLLOUT=2")
		r := c.kubectlReal.ok(t, "-n", ns, "rollout", "status", "daemonset/"+name, "--timeout", "4m")
		if !strings.Contains(r.stdout, "successfully rolled out") {
			t.Errorf("kubectl rollout status:\n%s", r)
		}
		after := running(t, "the pods after the rollout", nodes...)
		for n, p := range after {
			if p.UID == before[n].UID || len(p.Spec.Containers[0].Env) != 1 {
				t.Errorf("the pod on %s was not replaced by one of the new template: %s", n, p.Name)
			}
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "-n", ns, "rollout", "history", "daemonset/"+name).stdout
			if rowOf(out, "1") == nil || rowOf(out, "2") == nil {
				t.Errorf("%s kubectl rollout history: want revisions 1 and 2:\n%s", k.name, out)
			}
		}
		r = c.kubectl.ok(t, "-n", ns, "rollout", "undo", "daemonset/"+name)
		if !strings.Contains(r.stdout, "daemonset.apps/"+name+" rolled back") {
			t.Errorf("kubectl rollout undo:\n%s", r)
		}
		c.kubectl.ok(t, "-n", ns, "rollout", "status", "daemonset/"+name, "--timeout", "4m")
		undone := running(t, "the pods after the undo", nodes...)
		for n, p := range undone {
			if len(p.Spec.Containers[0].Env) != 0 {
				t.Errorf("the pod on %s still has the rolled-back env: %s", n, p.Name)
			}
		}
		out := c.kubectlReal.ok(t, "-n", ns, "rollout", "history", "daemonset/"+name).stdout
		if rowOf(out, "2") == nil || rowOf(out, "3") == nil || rowOf(out, "1") != nil {
			t.Errorf("after the undo revision 1 should be 3:\n%s", out)
		}
		r = c.kubectlReal.ok(t, "-n", ns, "rollout", "restart", "daemonset/"+name)
		if !strings.Contains(r.stdout, "daemonset.apps/"+name+" restarted") {
			t.Errorf("kubectl rollout restart:\n%s", r)
		}
		c.kubectlReal.ok(t, "-n", ns, "rollout", "status", "daemonset/"+name, "--timeout", "4m")
		r = c.kubectlReal.ok(t, "-n", ns, "rollout", "undo", "daemonset/"+name)
		if !strings.Contains(r.stdout, "rolled back") {
			t.Errorf("real kubectl rollout undo:\n%s", r)
		}
		c.kubectlReal.ok(t, "-n", ns, "rollout", "status", "daemonset/"+name, "--timeout", "4m")
	})
}
