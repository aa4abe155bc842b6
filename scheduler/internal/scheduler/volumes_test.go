package scheduler

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/scheduler/internal/framework"
)

// claimStore is a framework.Volumes a test changes as the binder would.
type claimStore struct {
	mu      sync.Mutex
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
}

func (c *claimStore) Claim(ns, name string) (*corev1.PersistentVolumeClaim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[ns+"/"+name]
	return cl, ok
}

func (c *claimStore) Volume(name string) (*corev1.PersistentVolume, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pv, ok := c.volumes[name]
	return pv, ok
}

// A pod whose claim is not bound waits, saying so, and is placed once the claim is bound.
func TestHarnessPodWaitsForItsClaim(t *testing.T) {
	store := &claimStore{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}}
	h := newHarness(t, framework.Balanced{}, func(c *Config) { c.Volumes = store })
	h.addNode(mkNode("a", "10"))
	h.addNode(mkNode("b", "10"))
	h.addPod(mkPod("p", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}))
	message := func() string {
		p, _ := h.Get("default", "p")
		if p.Spec.NodeName != "" || len(p.Status.Conditions) != 1 {
			t.Fatalf("pod %s: want it unscheduled with one condition, got node %q, conditions %+v", p.Name, p.Spec.NodeName, p.Status.Conditions)
		}
		return p.Status.Conditions[0].Message
	}

	h.run()
	if got, want := message(), `0/2 nodes are available: persistentvolumeclaim "data" not found.`; got != want {
		t.Errorf("without its claim: %q, want %q", got, want)
	}

	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "c1"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	store.mu.Lock()
	store.claims["default/data"] = claim
	store.mu.Unlock()
	h.s.VolumeHandler().OnAdd(claim)
	h.run()
	if got, want := message(), "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."; got != want {
		t.Errorf("with its claim pending: %q, want %q", got, want)
	}

	// The binder binds it to a volume that only node b can use.
	bound := claim.DeepCopy()
	bound.Spec.VolumeName, bound.Status.Phase = "pv-1", corev1.ClaimBound
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "c1"},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}}
	store.mu.Lock()
	store.claims["default/data"], store.volumes["pv-1"] = bound, pv
	store.mu.Unlock()
	h.s.VolumeHandler().OnAdd(pv)
	h.s.VolumeHandler().OnUpdate(claim, bound)
	h.run()
	if diff := cmp.Diff(map[string]int{"b": 1}, h.perNode()); diff != "" {
		t.Errorf("after the claim was bound, pods per node (-want +got):\n%s", diff)
	}
}
