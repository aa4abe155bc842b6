package volume

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	rwo  = corev1.ReadWriteOnce
	rox  = corev1.ReadOnlyMany
	rwx  = corev1.ReadWriteMany
	rwop = corev1.ReadWriteOncePod
)

func ptr[T any](v T) *T { return &v }

type pvOpt func(*corev1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{rwo},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func withModes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func withClass(c string) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = c }
}
func withLabels(kv ...string) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			v.Labels[kv[i]] = kv[i+1]
		}
	}
}
func withRef(ns, name, uid string) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: name, UID: types.UID(uid)}
	}
}
func withPhase(p corev1.PersistentVolumePhase) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Status.Phase = p }
}
func withPolicy(p corev1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
}
func withBlock() pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock) }
}
func deleting() pvOpt {
	return func(v *corev1.PersistentVolume) { v.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
}

type pvcOpt func(*corev1.PersistentVolumeClaim)

func pvc(name, size string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{rwo},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			StorageClassName: ptr(""),
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func claimModes(m ...corev1.PersistentVolumeAccessMode) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}
func claimClass(s *string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = s }
}
func claimSelector(s *metav1.LabelSelector) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = s }
}
func claimVolume(name string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = name }
}
func claimPhase(p corev1.PersistentVolumeClaimPhase) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = p }
}
func claimAnn(k, v string) pvcOpt {
	return func(c *corev1.PersistentVolumeClaim) { setAnnotation(&c.Annotations, k, v) }
}

func TestMatch(t *testing.T) {
	cases := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		want    string   // volume name, "" for none
		why     []string // parts of the reason when none
	}{
		{name: "smallest that fits", claim: pvc("c", "2Gi"),
			volumes: []*corev1.PersistentVolume{pv("big", "10Gi"), pv("small", "1Gi"), pv("fit", "3Gi"), pv("exact", "2Gi")}, want: "exact"},
		{name: "quantities compared by value", claim: pvc("c", "1000Mi"),
			volumes: []*corev1.PersistentVolume{pv("a", "1Gi"), pv("b", "1000M")}, want: "a"},
		{name: "too small", claim: pvc("c", "5Gi"), volumes: []*corev1.PersistentVolume{pv("a", "1Gi"), pv("b", "4Gi")},
			why: []string{"0/2 persistent volumes match", "2 too small"}},
		{name: "modes must all be offered", claim: pvc("c", "1Gi", claimModes(rwo, rox)),
			volumes: []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("both", "5Gi", withModes(rwo, rox, rwx))}, want: "both"},
		{name: "fewer modes win a tie", claim: pvc("c", "1Gi", claimModes(rwx)),
			volumes: []*corev1.PersistentVolume{pv("a-many", "1Gi", withModes(rwo, rox, rwx)), pv("b-one", "1Gi", withModes(rwx))}, want: "b-one"},
		{name: "ReadWriteOncePod", claim: pvc("c", "1Gi", claimModes(rwop)),
			volumes: []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("rwop", "1Gi", withModes(rwop))}, want: "rwop"},
		{name: "lacking modes", claim: pvc("c", "1Gi", claimModes(rwx)), volumes: []*corev1.PersistentVolume{pv("rwo", "1Gi")},
			why: []string{"1 lacking access modes"}},
		{name: "class must be equal", claim: pvc("c", "1Gi", claimClass(ptr("fast"))),
			volumes: []*corev1.PersistentVolume{pv("none", "1Gi"), pv("slow", "1Gi", withClass("slow")), pv("fast", "8Gi", withClass("fast"))}, want: "fast"},
		{name: "empty class takes only classless volumes", claim: pvc("c", "1Gi"),
			volumes: []*corev1.PersistentVolume{pv("fast", "1Gi", withClass("fast"))}, why: []string{"1 of another storage class"}},
		{name: "nil class matches classless volumes", claim: pvc("c", "1Gi", claimClass(nil)),
			volumes: []*corev1.PersistentVolume{pv("fast", "1Gi", withClass("fast")), pv("plain", "1Gi")}, want: "plain"},
		{name: "matchLabels", claim: pvc("c", "1Gi", claimSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})),
			volumes: []*corev1.PersistentVolume{pv("a", "1Gi", withLabels("tier", "silver")), pv("b", "2Gi", withLabels("tier", "gold"))}, want: "b"},
		{name: "matchExpressions", claim: pvc("c", "1Gi", claimSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}, {Key: "old", Operator: metav1.LabelSelectorOpDoesNotExist}}})),
			volumes: []*corev1.PersistentVolume{pv("a", "1Gi", withLabels("zone", "a", "old", "y")), pv("c", "1Gi", withLabels("zone", "c")), pv("b", "1Gi", withLabels("zone", "b"))}, want: "b"},
		{name: "selector excludes all", claim: pvc("c", "1Gi", claimSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})),
			volumes: []*corev1.PersistentVolume{pv("a", "1Gi")}, why: []string{"1 not matching the selector"}},
		{name: "bound volumes are not offered", claim: pvc("c", "1Gi"),
			volumes: []*corev1.PersistentVolume{pv("taken", "1Gi", withRef("ns", "other", "u2"), withPhase(corev1.VolumeBound)), pv("released", "1Gi", withRef("ns", "gone", "u3"), withPhase(corev1.VolumeReleased))},
			why:     []string{"2 bound to another claim"}},
		{name: "pre-bound volume wins over a smaller free one", claim: pvc("c", "1Gi"),
			volumes: []*corev1.PersistentVolume{pv("free", "1Gi"), pv("mine", "5Gi", withRef("ns", "c", ""))}, want: "mine"},
		{name: "pre-bound by uid", claim: pvc("c", "1Gi"),
			volumes: []*corev1.PersistentVolume{pv("free", "1Gi"), pv("mine", "5Gi", withRef("ns", "c", "uid-c"), withPhase(corev1.VolumePending))}, want: "mine"},
		{name: "pre-bound to an older claim of the same name", claim: pvc("c", "1Gi"),
			volumes: []*corev1.PersistentVolume{pv("old", "1Gi", withRef("ns", "c", "uid-old"))}, why: []string{"1 bound to another claim"}},
		{name: "pre-bound but too small", claim: pvc("c", "2Gi"),
			volumes: []*corev1.PersistentVolume{pv("mine", "1Gi", withRef("ns", "c", ""))}, why: []string{"pre-bound to this claim but capacity 1Gi is less than the 2Gi requested"}},
		{name: "pre-bound ignores the selector", claim: pvc("c", "1Gi", claimSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}})),
			volumes: []*corev1.PersistentVolume{pv("mine", "1Gi", withRef("ns", "c", ""))}, want: "mine"},
		{name: "not yet available", claim: pvc("c", "1Gi"), volumes: []*corev1.PersistentVolume{pv("new", "1Gi", withPhase(corev1.VolumePending))},
			why: []string{"1 not Available"}},
		{name: "being deleted", claim: pvc("c", "1Gi"), volumes: []*corev1.PersistentVolume{pv("old", "1Gi", deleting())}, why: []string{"1 being deleted"}},
		{name: "volume mode", claim: pvc("c", "1Gi"), volumes: []*corev1.PersistentVolume{pv("raw", "1Gi", withBlock())}, why: []string{"1 of another volume mode"}},
		{name: "no volumes", claim: pvc("c", "1Gi"), why: []string{"no persistent volumes exist"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Match(tc.claim, tc.volumes)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Fatalf("Match = %q (%s), want %q", name, why, tc.want)
			}
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("reason %q lacks %q", why, w)
				}
			}
		})
	}
}

func class(name, provisioner string, def bool, created int64) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(created, 0)}, Provisioner: provisioner}
	if def {
		sc.Annotations = map[string]string{AnnDefaultClass: "true"}
	}
	return sc
}

func TestDefaultClass(t *testing.T) {
	cases := []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none", []*storagev1.StorageClass{class("a", "p", false, 1)}, ""},
		{"one", []*storagev1.StorageClass{class("a", "p", false, 1), class("b", "p", true, 1)}, "b"},
		{"newest of several", []*storagev1.StorageClass{class("old", "p", true, 1), class("new", "p", true, 5), class("mid", "p", true, 3)}, "new"},
		{"beta annotation", []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "beta", Annotations: map[string]string{annBetaDefaultClass: "true"}}}}, "beta"},
		{"false is not default", []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "no", Annotations: map[string]string{AnnDefaultClass: "false"}}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if sc := DefaultClass(tc.classes); sc != nil {
				got = sc.Name
			}
			if got != tc.want {
				t.Errorf("DefaultClass = %q, want %q", got, tc.want)
			}
		})
	}
}
