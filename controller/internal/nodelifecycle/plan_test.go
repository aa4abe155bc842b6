package nodelifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

var (
	t0       = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	settings = Settings{GracePeriod: 40 * time.Second, DefaultToleration: 300 * time.Second}
)

func mt(t time.Time) metav1.Time   { return metav1.NewTime(t) }
func mtp(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
func secs(n int64) *int64          { return &n }

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: mt(t0.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
		}},
	}
}

func tainted(n *corev1.Node, at time.Time) *corev1.Node {
	n.Spec.Taints = unreachableTaints(at)
	return n
}

func unknownNode(n *corev1.Node, at time.Time) *corev1.Node {
	n.Status.Conditions, _ = unknownConditions(n.Status.Conditions, at)
	return n
}

func lease(renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "n1"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

func pod(name string, tweak ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, f := range tweak {
		f(p)
	}
	return p
}

func tolerating(seconds *int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
			Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds,
		})
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// summary is the part of a Plan the table compares; the full objects are checked separately.
type summary struct {
	Unreachable, BecameUnreachable, ConditionsWritten, TaintsChanged bool
	Taints                                                           []string
	NotReady, Evict, ForceDelete                                     []string
	RequeueAfter                                                     time.Duration
}

func summarize(p Plan) summary {
	s := summary{
		Unreachable: p.Unreachable, BecameUnreachable: p.BecameUnreachable, ConditionsWritten: p.Conditions != nil,
		TaintsChanged: p.TaintsChanged, NotReady: names(p.PodsNotReady), Evict: names(p.Evict),
		ForceDelete: names(p.ForceDelete), RequeueAfter: p.RequeueAfter,
	}
	if p.TaintsChanged {
		for _, t := range p.Taints {
			s.Taints = append(s.Taints, t.Key+":"+string(t.Effect))
		}
	}
	return s
}

func TestDecide(t *testing.T) {
	unreachable := []string{TaintUnreachable + ":NoSchedule", TaintUnreachable + ":NoExecute"}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = mtp(t0) }
	tests := []struct {
		name string
		in   Input
		want summary
	}{{
		name: "fresh lease: nothing to do, look again when it would expire",
		in:   Input{Node: readyNode("n1"), Lease: lease(t0.Add(-10 * time.Second)), Pods: []*corev1.Pod{pod("a")}, Now: t0},
		want: summary{RequeueAfter: 30 * time.Second},
	}, {
		name: "lease just past the grace period: unknown, tainted, pods not ready",
		in:   Input{Node: readyNode("n1"), Lease: lease(t0.Add(-41 * time.Second)), Pods: []*corev1.Pod{pod("a"), pod("b")}, Now: t0},
		want: summary{Unreachable: true, BecameUnreachable: true, ConditionsWritten: true, TaintsChanged: true,
			Taints: unreachable, NotReady: []string{"a", "b"}, RequeueAfter: 300 * time.Second},
	}, {
		name: "lease exactly at the grace period counts as expired",
		in:   Input{Node: readyNode("n1"), Lease: lease(t0.Add(-40 * time.Second)), Now: t0},
		want: summary{Unreachable: true, BecameUnreachable: true, ConditionsWritten: true, TaintsChanged: true, Taints: unreachable},
	}, {
		name: "no lease, node created long ago",
		in:   Input{Node: readyNode("n1"), Now: t0},
		want: summary{Unreachable: true, BecameUnreachable: true, ConditionsWritten: true, TaintsChanged: true, Taints: unreachable},
	}, {
		name: "no lease, node just created: grace from its creation",
		in: Input{Node: func() *corev1.Node {
			n := readyNode("n1")
			n.CreationTimestamp = mt(t0.Add(-5 * time.Second))
			return n
		}(), Now: t0},
		want: summary{RequeueAfter: 35 * time.Second},
	}, {
		name: "old lease but the controller only started: grace from its start",
		in:   Input{Node: readyNode("n1"), Lease: lease(t0.Add(-time.Hour)), Now: t0, ObservedSince: t0.Add(-15 * time.Second)},
		want: summary{RequeueAfter: 25 * time.Second},
	}, {
		name: "already unknown and tainted: toleration not over, wait for it",
		in: Input{Node: tainted(unknownNode(readyNode("n1"), t0.Add(-100*time.Second)), t0.Add(-100*time.Second)),
			Lease: lease(t0.Add(-200 * time.Second)), Pods: []*corev1.Pod{pod("a", func(p *corev1.Pod) {
				p.Status.Conditions[0].Status = corev1.ConditionFalse
			})}, Now: t0},
		want: summary{Unreachable: true, RequeueAfter: 200 * time.Second},
	}, {
		name: "toleration over: evict, skipping pods already deleting and tolerating forever",
		in: Input{Node: tainted(unknownNode(readyNode("n1"), t0), t0.Add(-300*time.Second)),
			Lease: lease(t0.Add(-400 * time.Second)),
			Pods:  []*corev1.Pod{pod("a"), pod("gone", deleting), pod("stays", tolerating(nil))}, Now: t0},
		want: summary{Unreachable: true, NotReady: []string{"a", "stays"}, Evict: []string{"a"}},
	}, {
		name: "a pod's own toleration overrides the default, both ways",
		in: Input{Node: tainted(unknownNode(readyNode("n1"), t0), t0.Add(-10*time.Second)),
			Lease: lease(t0.Add(-60 * time.Second)),
			Pods:  []*corev1.Pod{pod("short", tolerating(secs(5))), pod("long", tolerating(secs(600))), pod("default")}, Now: t0},
		want: summary{Unreachable: true, NotReady: []string{"short", "long", "default"}, Evict: []string{"short"}, RequeueAfter: 290 * time.Second},
	}, {
		name: "zero toleration evicts as soon as the node is tainted",
		in:   Input{Node: readyNode("n1"), Lease: lease(t0.Add(-time.Minute)), Pods: []*corev1.Pod{pod("a", tolerating(secs(0)))}, Now: t0},
		want: summary{Unreachable: true, BecameUnreachable: true, ConditionsWritten: true, TaintsChanged: true,
			Taints: unreachable, NotReady: []string{"a"}, Evict: []string{"a"}},
	}, {
		name: "finished pods are not marked not ready, but are evicted",
		in: Input{Node: tainted(unknownNode(readyNode("n1"), t0), t0.Add(-time.Hour)), Lease: lease(t0.Add(-time.Hour)),
			Pods: []*corev1.Pod{pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}, Now: t0},
		want: summary{Unreachable: true, Evict: []string{"done"}},
	}, {
		name: "node back: taints removed, other taints kept",
		in: Input{Node: func() *corev1.Node {
			n := tainted(unknownNode(readyNode("n1"), t0), t0.Add(-time.Minute))
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
			return n
		}(), Lease: lease(t0), Pods: []*corev1.Pod{pod("a")}, Now: t0},
		want: summary{TaintsChanged: true, Taints: []string{"dedicated:NoSchedule"}, RequeueAfter: 40 * time.Second},
	}, {
		name: "deleted node: every pod is force-deleted, deleting ones too",
		in:   Input{Pods: []*corev1.Pod{pod("a"), pod("b", deleting)}, Now: t0},
		want: summary{ForceDelete: []string{"a", "b"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, summarize(Decide(tt.in, settings))); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideWritesUnknownConditionsAndTaints(t *testing.T) {
	node := readyNode("n1")
	node.Status.Conditions = node.Status.Conditions[:2] // the kubelet never reported disk and PID
	p := Decide(Input{Node: node, Lease: lease(t0.Add(-time.Minute)), Now: t0}, settings)
	ts := mt(t0)
	want := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusUnknown, Message: MessageStatusUnknown, LastTransitionTime: ts},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusUnknown, Message: MessageStatusUnknown, LastTransitionTime: ts},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated, Message: MessageNeverUpdated, LastHeartbeatTime: ts, LastTransitionTime: ts},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated, Message: MessageNeverUpdated, LastHeartbeatTime: ts, LastTransitionTime: ts},
	}
	if diff := cmp.Diff(want, p.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	wantTaints := []corev1.Taint{
		{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: mtp(t0)},
	}
	if diff := cmp.Diff(wantTaints, p.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	if node.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Error("Decide modified its input node")
	}
}

func TestPodNotReadyCopies(t *testing.T) {
	in := pod("a")
	p := Decide(Input{Node: readyNode("n1"), Pods: []*corev1.Pod{in}, Now: t0}, settings)
	if len(p.PodsNotReady) != 1 {
		t.Fatalf("want one pod marked not ready, got %d", len(p.PodsNotReady))
	}
	want := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonPodNodeNotReady, LastTransitionTime: mt(t0)}}
	if diff := cmp.Diff(want, p.PodsNotReady[0].Status.Conditions); diff != "" {
		t.Errorf("pod conditions (-want +got):\n%s", diff)
	}
	if in.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Error("Decide modified its input pod")
	}
}

func TestToleration(t *testing.T) {
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		want        time.Duration
		forever     bool
	}{
		{name: "none: the default", want: 300 * time.Second},
		{name: "own seconds", tolerations: []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(7)}}, want: 7 * time.Second},
		{name: "without seconds: forever", tolerations: []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists}}, forever: true},
		{name: "tolerate everything", tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, forever: true},
		{name: "other key: the default", tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, TolerationSeconds: secs(1)}}, want: 300 * time.Second},
		{name: "NoSchedule only: the default", tolerations: []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: secs(1)}}, want: 300 * time.Second},
		{name: "longest of several", tolerations: []corev1.Toleration{
			{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: secs(10)},
			{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: secs(20)},
		}, want: 20 * time.Second},
		{name: "negative counts as zero", tolerations: []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: secs(-5)}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tt.tolerations}}
			got, forever := Toleration(p, 300*time.Second)
			if got != tt.want || forever != tt.forever {
				t.Errorf("Toleration = %v, forever %v; want %v, forever %v", got, forever, tt.want, tt.forever)
			}
		})
	}
}
