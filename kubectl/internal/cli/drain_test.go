package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			p := planDrain(pods, tt.opts)
			got := result{names(p.evict), p.ignoredDaemonSet, p.unmanaged, p.blockDaemonSet, p.blockBare}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
