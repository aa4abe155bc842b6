package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/informer"
)

type recordingObserver struct{ calls []string }

func (r *recordingObserver) Observe(n *corev1.Node) {
	r.calls = append(r.calls, "observe "+n.Name+" "+n.Spec.PodCIDR)
}
func (r *recordingObserver) ObserveDeleted(name string) { r.calls = append(r.calls, "deleted "+name) }

func testNode(name, rv, cidr, ip string) *corev1.Node {
	n := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, UID: types.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{PodCIDR: cidr},
	}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

func TestNodeHandler(t *testing.T) {
	obs := &recordingObserver{}
	triggers := 0
	h := nodeHandler(obs, func() { triggers++ })
	a1 := testNode("a", "1", "", "192.168.5.2")
	a2 := testNode("a", "2", "10.244.1.0/24", "192.168.5.2")
	a3 := a2.DeepCopy()
	a3.ResourceVersion = "3"
	a3.Annotations = map[string]string{"minik8s.io/usage-cpu": "250m"} // a usage report
	steps := []struct {
		name         string
		do           func()
		wantTriggers int
	}{
		{"added", func() { h.OnAdd(a1) }, 1},
		{"gets its pod CIDR", func() { h.OnUpdate(a1, a2) }, 2},
		{"a change routes do not care about", func() { h.OnUpdate(a2, a3) }, 2},
		{"deleted, seen by a relist", func() { h.OnDelete(&informer.Tombstone{Key: "a", Obj: a3}) }, 3},
	}
	for _, s := range steps {
		s.do()
		if triggers != s.wantTriggers {
			t.Errorf("%s: %d route syncs asked for, want %d", s.name, triggers, s.wantTriggers)
		}
	}
	want := []string{"observe a ", "observe a 10.244.1.0/24", "observe a 10.244.1.0/24", "deleted a"}
	if d := cmp.Diff(want, obs.calls); d != "" {
		t.Errorf("agent told (-want +got):\n%s", d)
	}
}
