package daemonset

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/controller/internal/history"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func daemonSet(mod ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Generation: 2},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}},
		},
	}
	for _, m := range mod {
		m(ds)
	}
	return ds
}

func ptr[T any](v T) *T { return &v }

func node(name string, mod ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, m := range mod {
		m(n)
	}
	return n
}

func labelled(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

func tainted(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

// pod is a daemon pod named name on node of revision hash; ready says since when it is ready.
func pod(name, nodeName, hash string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{"app": "agent", history.HashLabel: hash}},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func ready(since time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	}
}

func TestShouldRun(t *testing.T) {
	tests := []struct {
		name           string
		ds             *appsv1.DaemonSet
		node           *corev1.Node
		run, continue_ bool
	}{
		{"plain node", daemonSet(), node("a"), true, true},
		{"nodeSelector matches", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node("a", labelled("disk", "ssd")), true, true},
		{"nodeSelector does not match", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node("a"), false, false},
		{"required affinity does not match", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}}}}}}}
		}), node("a", labelled("zone", "y")), false, false},
		{"nodeName names another node", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "b" }), node("a"), false, false},
		{"NoSchedule taint untolerated: no new pod, the old one stays", daemonSet(), node("a", tainted("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"NoExecute taint untolerated: none", daemonSet(), node("a", tainted("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"PreferNoSchedule is no bar", daemonSet(), node("a", tainted("dedicated", corev1.TaintEffectPreferNoSchedule)), true, true},
		{"taint tolerated", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), node("a", tainted("dedicated", corev1.TaintEffectNoExecute)), true, true},
		{"cordoned node: tolerated by default", daemonSet(), node("a", tainted(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), true, true},
		{"not-ready node: tolerated by default", daemonSet(), node("a", tainted(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), true, true},
		{"unreachable node: tolerated by default", daemonSet(), node("a", tainted(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), true, true},
		{"memory pressure: tolerated by default", daemonSet(), node("a", tainted(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), true, true},
		{"network unavailable: only host-network pods", daemonSet(), node("a", tainted(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"network unavailable, host network", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }),
			node("a", tainted(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, cont := ShouldRun(tt.node, tt.ds)
			if run != tt.run || cont != tt.continue_ {
				t.Errorf("ShouldRun = %v, %v; want %v, %v", run, cont, tt.run, tt.continue_)
			}
		})
	}
}

func TestNewPod(t *testing.T) {
	ds := daemonSet(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}}
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(5))}}
	})
	p := NewPod(ds, "node-1", "abc")
	if p.GenerateName != "agent-" || p.Labels[history.HashLabel] != "abc" || p.Labels["app"] != "agent" {
		t.Errorf("name and labels: %q %v", p.GenerateName, p.Labels)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "DaemonSet" || ref.UID != "ds-uid" {
		t.Errorf("controller: %v", ref)
	}
	wantAff := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}
	if diff := cmp.Diff(wantAff, p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	want := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if diff := cmp.Diff(want, p.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if TargetNode(p) != "node-1" {
		t.Errorf("TargetNode = %q", TargetNode(p))
	}
	if ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("NewPod changed the DaemonSet's template")
	}
}

type decision struct {
	Create []string
	Delete []string
}

func names(d Decision) decision {
	out := decision{Create: d.Create}
	for _, p := range d.Delete {
		out.Delete = append(out.Delete, p.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	surge := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
	}
	onDelete := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}
	twoUnavailable := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("50%"))
	}
	old := t0.Add(-time.Hour)
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = ptr(metav1.NewTime(t0)) }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	later := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute)) }
	tests := []struct {
		name  string
		ds    *appsv1.DaemonSet
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  decision
	}{
		{"a pod on every node", daemonSet(), []*corev1.Node{node("b"), node("a")}, nil, decision{Create: []string{"a", "b"}}},
		{"only the nodes that match", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			[]*corev1.Node{node("a", labelled("disk", "ssd")), node("b")}, nil, decision{Create: []string{"a"}}},
		{"a node that joins gets its pod", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h", ready(old))}, decision{Create: []string{"b"}}},
		{"a node that left loses its pod", daemonSet(), []*corev1.Node{node("a")},
			[]*corev1.Pod{pod("p-a", "a", "h", ready(old)), pod("p-b", "b", "h", ready(old))}, decision{Delete: []string{"p-b"}}},
		{"a node that stops matching loses its pod", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			[]*corev1.Node{node("a")}, []*corev1.Pod{pod("p-a", "a", "h")}, decision{Delete: []string{"p-a"}}},
		{"a NoExecute taint evicts the pod", daemonSet(), []*corev1.Node{node("a", tainted("k", corev1.TaintEffectNoExecute))},
			[]*corev1.Pod{pod("p-a", "a", "h")}, decision{Delete: []string{"p-a"}}},
		{"a NoSchedule taint keeps the pod there", daemonSet(), []*corev1.Node{node("a", tainted("k", corev1.TaintEffectNoSchedule))},
			[]*corev1.Pod{pod("p-a", "a", "h")}, decision{}},
		{"an unbound pod counts for the node it is meant for", daemonSet(), []*corev1.Node{node("a")},
			[]*corev1.Pod{NewPod(daemonSet(), "a", "h")}, decision{}},
		{"a terminating pod is waited for, and replaced", daemonSet(), []*corev1.Node{node("a")},
			[]*corev1.Pod{pod("p-a", "a", "h", deleting)}, decision{Create: []string{"a"}}},
		{"a failed pod is deleted", daemonSet(), []*corev1.Node{node("a")},
			[]*corev1.Pod{pod("p-a", "a", "h", failed)}, decision{Delete: []string{"p-a"}}},
		{"two pods on a node: the younger goes", daemonSet(), []*corev1.Node{node("a")},
			[]*corev1.Pod{pod("p-2", "a", "h", later), pod("p-1", "a", "h")}, decision{Delete: []string{"p-2"}}},

		{"rolling: one available old pod at a time", daemonSet(), []*corev1.Node{node("a"), node("b"), node("c")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old)), pod("p-b", "b", "old", ready(old)), pod("p-c", "c", "old", ready(old))},
			decision{Delete: []string{"p-a"}}},
		{"rolling: none while a new pod is not yet available", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h"), pod("p-b", "b", "old", ready(old))}, decision{}},
		{"rolling: the next once it is", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h", ready(old)), pod("p-b", "b", "old", ready(old))}, decision{Delete: []string{"p-b"}}},
		// As upstream, unavailable old pods do not use up maxUnavailable.
		{"rolling: unavailable old pods go at once, beside one available", daemonSet(), []*corev1.Node{node("a"), node("b"), node("c"), node("d")},
			[]*corev1.Pod{pod("p-a", "a", "old"), pod("p-b", "b", "old"), pod("p-c", "c", "old", ready(old)), pod("p-d", "d", "old", ready(old))},
			decision{Delete: []string{"p-a", "p-b", "p-c"}}},
		{"rolling: maxUnavailable 50% of 4", daemonSet(twoUnavailable), []*corev1.Node{node("a"), node("b"), node("c"), node("d")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old)), pod("p-b", "b", "old", ready(old)), pod("p-c", "c", "old", ready(old)), pod("p-d", "d", "old", ready(old))},
			decision{Delete: []string{"p-a", "p-b"}}},
		{"rolling: done", daemonSet(), []*corev1.Node{node("a")}, []*corev1.Pod{pod("p-a", "a", "h", ready(old))}, decision{}},
		{"surge: a new pod beside the old one", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old)), pod("p-b", "b", "old", ready(old))}, decision{Create: []string{"a"}}},
		{"surge: the old pod stays until the new one is available", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old)), pod("n-a", "a", "h"), pod("p-b", "b", "old", ready(old))}, decision{}},
		{"surge: then it goes", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old)), pod("n-a", "a", "h", ready(old)), pod("p-b", "b", "old", ready(old))},
			decision{Delete: []string{"p-a"}}},
		{"surge: the next node surges", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("n-a", "a", "h", ready(old)), pod("p-b", "b", "old", ready(old))}, decision{Create: []string{"b"}}},
		{"surge: unavailable old pods are replaced freely", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "old"), pod("p-b", "b", "old")}, decision{Create: []string{"a", "b"}}},
		{"OnDelete: old pods stay", daemonSet(onDelete), []*corev1.Node{node("a")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old))}, decision{}},
		{"OnDelete: a deleted pod comes back new", daemonSet(onDelete), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "old", ready(old))}, decision{Create: []string{"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(Decide(tt.ds, tt.nodes, ByNode(tt.pods), "h", nil, t0))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBudgets(t *testing.T) {
	tests := []struct {
		name                string
		unavailable, surge  intstr.IntOrString
		desired             int
		wantSurge, wantUnav int
	}{
		{"defaults", intstr.FromInt32(1), intstr.FromInt32(0), 10, 0, 1},
		{"percent rounds up", intstr.FromString("25%"), intstr.FromInt32(0), 10, 0, 3},
		{"surge percent rounds down", intstr.FromInt32(0), intstr.FromString("25%"), 10, 2, 0},
		{"surge of nothing: one unavailable", intstr.FromInt32(0), intstr.FromString("10%"), 5, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := daemonSet(func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &tt.unavailable, MaxSurge: &tt.surge}
			})
			s, u := Budgets(ds, tt.desired)
			if s != tt.wantSurge || u != tt.wantUnav {
				t.Errorf("Budgets = %d, %d; want %d, %d", s, u, tt.wantSurge, tt.wantUnav)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	ds := daemonSet(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{"run": "yes"}
		ds.Spec.MinReadySeconds = 10
	})
	yes := labelled("run", "yes")
	nodes := []*corev1.Node{node("a", yes), node("b", yes), node("c", yes), node("d", yes), node("e")}
	pods := []*corev1.Pod{
		pod("p-a", "a", "h", ready(t0.Add(-time.Minute))),   // available, updated
		pod("p-b", "b", "old", ready(t0.Add(-time.Second))), // ready, available in 9s
		pod("p-c", "c", "h"),                                // not ready
		pod("p-e", "e", "h"),                                // misscheduled
	}
	st, next := Status(ds, nodes, ByNode(pods), "h", t0)
	want := appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberMisscheduled: 1,
		NumberReady: 2, UpdatedNumberScheduled: 2, NumberAvailable: 1, NumberUnavailable: 3}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	if next != 9*time.Second {
		t.Errorf("next = %s, want 9s", next)
	}
}

func TestPrune(t *testing.T) {
	rev := func(n int64, hash string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r-" + hash, Labels: map[string]string{history.HashLabel: hash}}, Revision: n}
	}
	old := []*appsv1.ControllerRevision{rev(3, "c"), rev(1, "a"), rev(2, "b"), rev(4, "d")}
	pods := []*corev1.Pod{pod("p", "n", "a")}
	var got []string
	for _, r := range Prune(old, pods, ptr(int32(1))) {
		got = append(got, r.Name)
	}
	if diff := cmp.Diff([]string{"r-b", "r-c"}, got); diff != "" {
		t.Errorf("Prune (-want +got):\n%s", diff)
	}
	if p := Prune(old, nil, nil); len(p) != 0 {
		t.Errorf("with the default limit of 10 nothing goes, got %d", len(p))
	}
}

// A failed pod waits out its node's back-off: held, it is neither deleted nor replaced and
// the decision says when to look again; free, it is deleted and reported for the next step.
func TestDecideBacksOffFailedPods(t *testing.T) {
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	nodes := []*corev1.Node{node("a"), node("b"), node("c")}
	pods := []*corev1.Pod{pod("p-a", "a", "h", failed), pod("p-b", "b", "h", failed), pod("p-c", "c", "h", failed)}
	held := func(n string) time.Duration {
		return map[string]time.Duration{"a": 4 * time.Second, "b": 2 * time.Second}[n]
	}
	d := Decide(daemonSet(), nodes, ByNode(pods), "h", held, t0)
	if diff := cmp.Diff(decision{Delete: []string{"p-c"}}, names(d)); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
	if len(d.Failed) != 1 || d.Failed["c"] == nil || d.Failed["c"].Name != "p-c" {
		t.Errorf("Failed = %v, want node c's p-c", d.Failed)
	}
	if d.Retry != 2*time.Second {
		t.Errorf("Retry = %s, want the shortest hold, 2s", d.Retry)
	}
}
