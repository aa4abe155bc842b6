package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

func TestPlanDrain(t *testing.T) {
	yes := true
	owned := func(name, kind string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "o", Controller: &yes}}}}
	}
	bare := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare"}}
	done := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "done"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	mirror := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mirror", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}
	pods := []corev1.Pod{owned("rs", "ReplicaSet"), owned("ds", "DaemonSet"), bare, done, mirror}
	names := func(ps []corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	type result struct{ Evict, IgnoredDS, Unmanaged, BlockDS, BlockBare []string }
	tests := []struct {
		name string
		opts drainOptions
		want result
	}{
		{"defaults block bare and daemonset pods", drainOptions{}, result{Evict: []string{"rs", "done"}, BlockDS: []string{"ns/ds"}, BlockBare: []string{"ns/bare"}}},
		{"ignore daemonsets", drainOptions{ignoreDaemonSets: true}, result{Evict: []string{"rs", "done"}, IgnoredDS: []string{"ns/ds"}, BlockBare: []string{"ns/bare"}}},
		{"force", drainOptions{ignoreDaemonSets: true, force: true}, result{Evict: []string{"rs", "bare", "done"}, IgnoredDS: []string{"ns/ds"}, Unmanaged: []string{"ns/bare"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planDrain(pods, tt.opts, nil)
			got := result{names(p.evict), p.ignoredDaemonSet, p.unmanaged, p.blockDaemonSet, p.blockBare}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanDrainMissingDaemonSet: a pod whose DaemonSet is gone blocks the drain with the
// lookup's error, or with --force is deleted with it as a warning, as upstream.
func TestPlanDrainMissingDaemonSet(t *testing.T) {
	yes := true
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent-x",
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &yes}}}}
	gone := func(ns, name string) error { return apierror.NotFound("apps", "daemonsets", name) }
	p := planDrain([]corev1.Pod{pod}, drainOptions{ignoreDaemonSets: true}, gone)
	if diff := cmp.Diff([]string{`daemonsets.apps "agent" not found: ns/agent-x`}, p.orphanBlock.lines()); diff != "" || len(p.evict) != 0 || len(p.ignoredDaemonSet) != 0 {
		t.Errorf("without --force: blocked %v, evict %d, ignored %v", p.orphanBlock.lines(), len(p.evict), p.ignoredDaemonSet)
	}
	p = planDrain([]corev1.Pod{pod}, drainOptions{ignoreDaemonSets: true, force: true}, gone)
	if diff := cmp.Diff([]string{`daemonsets.apps "agent" not found: ns/agent-x`}, p.orphanWarn.lines()); diff != "" || len(p.evict) != 1 {
		t.Errorf("with --force: warned %v, evict %d", p.orphanWarn.lines(), len(p.evict))
	}
	p = planDrain([]corev1.Pod{pod}, drainOptions{ignoreDaemonSets: true}, func(string, string) error { return nil })
	if len(p.ignoredDaemonSet) != 1 || len(p.orphanBlock.lines()) != 0 {
		t.Errorf("existing DaemonSet: ignored %v", p.ignoredDaemonSet)
	}
}
