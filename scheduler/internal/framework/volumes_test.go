package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// volumeSet is a Volumes over fixed claims and volumes.
type volumeSet struct {
	claims  map[string]*corev1.PersistentVolumeClaim // namespace/name
	volumes map[string]*corev1.PersistentVolume
}

func (v volumeSet) Claim(ns, name string) (*corev1.PersistentVolumeClaim, bool) {
	c, ok := v.claims[ns+"/"+name]
	return c, ok
}

func (v volumeSet) Volume(name string) (*corev1.PersistentVolume, bool) {
	pv, ok := v.volumes[name]
	return pv, ok
}

func claim(name, volume string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: phase},
	}
}

func volume(name, claimName string, nodeTerms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if claimName != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: claimName, UID: types.UID("uid-" + claimName)}
	}
	if len(nodeTerms) > 0 {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: nodeTerms}}
	}
	return pv
}

func withClaims(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v-" + n,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

func volumes(claims []*corev1.PersistentVolumeClaim, pvs ...*corev1.PersistentVolume) volumeSet {
	v := volumeSet{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}}
	for _, c := range claims {
		v.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, pv := range pvs {
		v.volumes[pv.Name] = pv
	}
	return v
}

func TestCheckClaims(t *testing.T) {
	now := metav1.Now()
	deleting := claim("data", "pv-1", corev1.ClaimBound)
	deleting.DeletionTimestamp = &now
	gonePV := volume("pv-1", "data")
	gonePV.DeletionTimestamp = &now
	bound := claim("data", "pv-1", corev1.ClaimBound)
	tests := []struct {
		name string
		pod  *corev1.Pod
		vols volumeSet
		want string
	}{
		{"no claims", pod("p"), volumes(nil), ""},
		{"bound claim", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{bound}, volume("pv-1", "data")), ""},
		{"the same claim twice", pod("p", withClaims("data", "data")), volumes([]*corev1.PersistentVolumeClaim{bound}, volume("pv-1", "data")), ""},
		{"missing claim", pod("p", withClaims("data")), volumes(nil), `persistentvolumeclaim "data" not found`},
		{"pending claim", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{claim("data", "", corev1.ClaimPending)}), ReasonUnboundClaims},
		{"volume named, claim not yet Bound", pod("p", withClaims("data")),
			volumes([]*corev1.PersistentVolumeClaim{claim("data", "pv-1", corev1.ClaimPending)}, volume("pv-1", "data")), ReasonUnboundClaims},
		{"a missing claim wins over an unbound one", pod("p", withClaims("data", "logs")),
			volumes([]*corev1.PersistentVolumeClaim{claim("data", "", corev1.ClaimPending)}), `persistentvolumeclaim "logs" not found`},
		{"claim being deleted", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{deleting}, volume("pv-1", "data")),
			`persistentvolumeclaim "data" is being deleted`},
		{"lost claim", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{claim("data", "pv-9", corev1.ClaimLost)}),
			`persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-9"`},
		{"bound volume missing from the cache", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{bound}),
			`persistentvolume "pv-1" of claim "data" not found`},
		{"volume being deleted", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{bound}, gonePV),
			`persistentvolume "pv-1" is being deleted`},
		{"volume bound to another claim", pod("p", withClaims("data")), volumes([]*corev1.PersistentVolumeClaim{bound}, volume("pv-1", "other")),
			`persistentvolume "pv-1" is bound to another claim`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckClaims(tt.pod, tt.vols); got != tt.want {
				t.Errorf("CheckClaims = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVolumeNodeAffinity(t *testing.T) {
	onA := term(corev1.NodeSelectorRequirement{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}})
	vols := volumes([]*corev1.PersistentVolumeClaim{claim("local", "pv-local", corev1.ClaimBound), claim("shared", "pv-shared", corev1.ClaimBound)},
		volume("pv-local", "local", onA), volume("pv-shared", "shared"))
	label := func(name string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Labels = map[string]string{"kubernetes.io/hostname": name} }
	}
	a, b := info(node("a", label("a"))), info(node("b", label("b")))
	f := VolumeNodeAffinity(vols)
	tests := []struct {
		name  string
		pod   *corev1.Pod
		wantA []string
		wantB []string
	}{
		{"a local volume keeps the pod on its node", pod("p", withClaims("local")), nil, []string{ReasonVolumeNodeAffinity}},
		{"a volume without node affinity fits everywhere", pod("p", withClaims("shared")), nil, nil},
		{"both: only where every volume can be", pod("p", withClaims("shared", "local")), nil, []string{ReasonVolumeNodeAffinity}},
		{"no claims", pod("p"), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPodInfo(tt.pod)
			if got := f.Fn(p, a); len(got) != len(tt.wantA) {
				t.Errorf("on a: %q, want %q", got, tt.wantA)
			}
			if got := f.Fn(p, b); len(got) != len(tt.wantB) || (len(got) > 0 && got[0] != tt.wantB[0]) {
				t.Errorf("on b: %q, want %q", got, tt.wantB)
			}
		})
	}
}

func TestFitErrorPreFilter(t *testing.T) {
	e := &FitError{NumNodes: 3, PreFilter: ReasonUnboundClaims}
	if got, want := e.Error(), "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
