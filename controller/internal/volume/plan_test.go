package volume

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const ours = DefaultProvisioner

func TestDecideClaim(t *testing.T) {
	standard := class("standard", ours, true, 1)
	external := class("ebs", "ebs.csi.aws.com", false, 1)
	cases := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		volumes  []*corev1.PersistentVolume
		classes  []*storagev1.StorageClass
		bind     string
		setClass string
		provide  string
		phase    corev1.PersistentVolumeClaimPhase
		event    string // reason: part of the message
	}{
		{name: "no class gets the default", claim: pvc("c", "1Gi", claimClass(nil)), classes: []*storagev1.StorageClass{external, standard}, setClass: "standard"},
		{name: "no class and no default matches classless volumes", claim: pvc("c", "1Gi", claimClass(nil)),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}, classes: []*storagev1.StorageClass{external}, bind: "v"},
		{name: "empty class is not defaulted", claim: pvc("c", "1Gi"), classes: []*storagev1.StorageClass{standard},
			phase: corev1.ClaimPending, event: "FailedBinding: no persistent volumes available for this claim and no storage class is set (no persistent volumes exist)"},
		{name: "existing volume before provisioning", claim: pvc("c", "1Gi", claimClass(ptr("standard"))),
			volumes: []*corev1.PersistentVolume{pv("v", "2Gi", withClass("standard"))}, classes: []*storagev1.StorageClass{standard}, bind: "v"},
		{name: "our class provisions", claim: pvc("c", "1Gi", claimClass(ptr("standard"))),
			volumes: []*corev1.PersistentVolume{pv("small", "1Mi", withClass("standard"))}, classes: []*storagev1.StorageClass{standard}, provide: "standard", phase: corev1.ClaimPending},
		{name: "another provisioner's class waits", claim: pvc("c", "1Gi", claimClass(ptr("ebs"))), classes: []*storagev1.StorageClass{external},
			phase: corev1.ClaimPending, event: "ExternalProvisioning: Waiting for a volume to be created either by the external provisioner 'ebs.csi.aws.com'"},
		{name: "missing class", claim: pvc("c", "1Gi", claimClass(ptr("gold"))),
			phase: corev1.ClaimPending, event: `ProvisioningFailed: storageclass.storage.k8s.io "gold" not found`},
		{name: "why nothing matched", claim: pvc("c", "5Gi"), volumes: []*corev1.PersistentVolume{pv("a", "1Gi"), pv("b", "2Gi", withModes(rwx))},
			phase: corev1.ClaimPending, event: "0/2 persistent volumes match: 2 too small"},
		{name: "provisioned volume pre-bound to the claim", claim: pvc("c", "1Gi", claimClass(ptr("standard"))),
			volumes: []*corev1.PersistentVolume{pv("pvc-uid-c", "1Gi", withClass("standard"), withRef("ns", "c", "uid-c"), withPhase(corev1.VolumePending))},
			classes: []*storagev1.StorageClass{standard}, bind: "pvc-uid-c"},
		{name: "pre-bound claim takes its free volume", claim: pvc("c", "1Gi", claimVolume("v")),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi"), pv("a", "1Gi")}, bind: "v"},
		{name: "pre-bound claim to a volume too small", claim: pvc("c", "2Gi", claimVolume("v")),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi")}, phase: corev1.ClaimPending, event: `VolumeMismatch: Cannot bind to requested volume "v": capacity 1Gi is less than the 2Gi requested`},
		{name: "pre-bound claim to a missing volume", claim: pvc("c", "1Gi", claimVolume("v")),
			phase: corev1.ClaimPending, event: `FailedBinding: volume "v" not found`},
		{name: "pre-bound claim to a taken volume", claim: pvc("c", "1Gi", claimVolume("v")),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi", withRef("ns", "other", "u9"))}, phase: corev1.ClaimPending, event: "already bound to a different claim"},
		{name: "bound claim finishes binding", claim: pvc("c", "1Gi", claimVolume("v")),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi", withRef("ns", "c", "uid-c"))}, bind: "v"},
		{name: "bound claim lost its volume", claim: pvc("c", "1Gi", claimVolume("v"), claimPhase(corev1.ClaimBound)),
			phase: corev1.ClaimLost, event: "ClaimLost: Bound claim has lost its PersistentVolume"},
		{name: "controller-bound claim whose volume went elsewhere", claim: pvc("c", "1Gi", claimVolume("v"), claimPhase(corev1.ClaimBound), claimAnn(AnnBoundByController, "yes")),
			volumes: []*corev1.PersistentVolume{pv("v", "1Gi", withRef("ns", "other", "u9"))}, phase: corev1.ClaimLost, event: "ClaimMisbound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideClaim(tc.claim, tc.volumes, tc.classes, ours)
			bind, provide := "", ""
			if d.Bind != nil {
				bind = d.Bind.Name
			}
			if d.Provision != nil {
				provide = d.Provision.Name
			}
			if bind != tc.bind || d.SetClass != tc.setClass || provide != tc.provide || d.Phase != tc.phase {
				t.Fatalf("got bind %q setClass %q provision %q phase %q (event %+v); want %q %q %q %q",
					bind, d.SetClass, provide, d.Phase, d.Event, tc.bind, tc.setClass, tc.provide, tc.phase)
			}
			got := ""
			if d.Event != nil {
				got = d.Event.Reason + ": " + d.Event.Message
			}
			if (tc.event == "") != (got == "") || !strings.Contains(got, tc.event) {
				t.Errorf("event %q, want one containing %q", got, tc.event)
			}
		})
	}
	t.Run("deleting claim", func(t *testing.T) {
		c := pvc("c", "1Gi")
		c.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		if d := DecideClaim(c, []*corev1.PersistentVolume{pv("v", "1Gi")}, nil, ours); d != (ClaimDecision{}) {
			t.Errorf("decision for a deleting claim: %+v", d)
		}
	})
}

func TestBindWrites(t *testing.T) {
	c := pvc("c", "1Gi")
	c.ResourceVersion = "7"
	v := pv("v", "2Gi", withModes(rwo, rwx))
	bound := BindVolume(v, c)
	want := &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "c", UID: "uid-c", ResourceVersion: "7"}
	if d := cmp.Diff(want, bound.Spec.ClaimRef); d != "" {
		t.Errorf("claimRef (-want +got):\n%s", d)
	}
	if bound.Annotations[AnnBoundByController] != "yes" || v.Spec.ClaimRef != nil {
		t.Errorf("bound-by-controller not set, or the cached volume was changed")
	}
	if BindVolume(bound, c) != nil {
		t.Error("binding a bound volume again writes")
	}
	// A volume pre-bound by name keeps the user's binding (no controller mark).
	pre := BindVolume(pv("p", "1Gi", withRef("ns", "c", "")), c)
	if pre == nil || pre.Spec.ClaimRef.UID != "uid-c" || pre.Annotations[AnnBoundByController] != "" {
		t.Errorf("pre-bound volume: %+v", pre)
	}

	bc := BindClaim(c, bound)
	if bc.Spec.VolumeName != "v" || bc.Annotations[AnnBindCompleted] != "yes" || bc.Annotations[AnnBoundByController] != "yes" {
		t.Errorf("claim: %+v", bc.ObjectMeta.Annotations)
	}
	if BindClaim(bc, bound) != nil {
		t.Error("binding a bound claim again writes")
	}
	st := ClaimStatus(bc, corev1.ClaimBound, bound)
	wantStatus := corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{rwo, rwx},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}
	if d := cmp.Diff(wantStatus, st.Status); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if ClaimStatus(st, corev1.ClaimBound, bound) != nil {
		t.Error("same status written again")
	}
}

func TestDecideVolume(t *testing.T) {
	bound := pvc("c", "1Gi", claimVolume("v"))
	unbound := pvc("c", "1Gi")
	elsewhere := pvc("c", "1Gi", claimVolume("other"))
	provisioned := func(o ...pvOpt) *corev1.PersistentVolume {
		v := pv("v", "1Gi", append([]pvOpt{withRef("ns", "c", "uid-c"), withPolicy(corev1.PersistentVolumeReclaimDelete), withPhase(corev1.VolumeBound)}, o...)...)
		v.Annotations = map[string]string{AnnProvisionedBy: ours}
		return v
	}
	cases := []struct {
		name   string
		volume *corev1.PersistentVolume
		claim  *corev1.PersistentVolumeClaim
		action VolumeAction
		phase  corev1.PersistentVolumePhase
		event  string
	}{
		{name: "free volume is Available", volume: pv("v", "1Gi", withPhase(corev1.VolumePending)), phase: corev1.VolumeAvailable},
		{name: "pre-bound by name, claim not there", volume: pv("v", "1Gi", withRef("ns", "c", "")), phase: corev1.VolumeAvailable},
		{name: "pre-bound by name, claim there", volume: pv("v", "1Gi", withRef("ns", "c", "")), claim: unbound, action: SyncClaim, phase: corev1.VolumeAvailable},
		{name: "bound both ways", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c")), claim: bound, phase: corev1.VolumeBound},
		{name: "claim yet to take it", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c"), withPhase(corev1.VolumeBound)), claim: unbound, action: SyncClaim, phase: corev1.VolumeBound},
		{name: "claim took another, controller's binding undone", volume: func() *corev1.PersistentVolume {
			v := pv("v", "1Gi", withRef("ns", "c", "uid-c"))
			v.Annotations = map[string]string{AnnBoundByController: "yes"}
			return v
		}(), claim: elsewhere, action: Unbind, phase: corev1.VolumeAvailable},
		{name: "claim took another, user's binding kept", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c"), withPhase(corev1.VolumeBound)), claim: elsewhere, phase: corev1.VolumeBound},
		{name: "retain: released", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c"), withPhase(corev1.VolumeBound)), phase: corev1.VolumeReleased},
		{name: "retain: a new claim of the same name is not the old one", volume: pv("v", "1Gi", withRef("ns", "c", "uid-old"), withPhase(corev1.VolumeBound)),
			claim: bound, phase: corev1.VolumeReleased},
		{name: "delete: ours goes", volume: provisioned(), action: Delete, phase: corev1.VolumeReleased},
		{name: "delete: provisioned but never bound", volume: provisioned(withPhase(corev1.VolumePending)), action: Delete, phase: corev1.VolumeReleased},
		{name: "delete: not ours fails", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c"), withPolicy(corev1.PersistentVolumeReclaimDelete)),
			phase: corev1.VolumeFailed, event: "VolumeFailedDelete"},
		{name: "recycle fails", volume: pv("v", "1Gi", withRef("ns", "c", "uid-c"), withPolicy(corev1.PersistentVolumeReclaimRecycle)),
			phase: corev1.VolumeFailed, event: "VolumeFailedRecycle"},
		{name: "claimRef cleared by an administrator", volume: pv("v", "1Gi", withPhase(corev1.VolumeReleased)), phase: corev1.VolumeAvailable},
		{name: "being deleted", volume: provisioned(deleting())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideVolume(tc.volume, tc.claim, ours)
			if d.Action != tc.action || d.Phase != tc.phase {
				t.Fatalf("got action %d phase %q, want %d %q", d.Action, d.Phase, tc.action, tc.phase)
			}
			got := ""
			if d.Event != nil {
				got = d.Event.Reason
			}
			if got != tc.event {
				t.Errorf("event %q, want %q", got, tc.event)
			}
		})
	}
	t.Run("status written once", func(t *testing.T) {
		v := pv("v", "1Gi", withPhase(corev1.VolumePending))
		next := VolumeStatus(v, VolumeDecision{Phase: corev1.VolumeAvailable})
		if next == nil || next.Status.Phase != corev1.VolumeAvailable || v.Status.Phase != corev1.VolumePending {
			t.Fatalf("VolumeStatus = %+v", next)
		}
		if VolumeStatus(next, VolumeDecision{Phase: corev1.VolumeAvailable}) != nil {
			t.Error("same status written again")
		}
	})
}

func TestProvisionedVolume(t *testing.T) {
	c := pvc("data", "3Gi", claimModes(rwx), claimClass(ptr("standard")))
	sc := class("standard", ours, true, 1)
	sc.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimRetain)
	v := ProvisionedVolume(c, sc, "/srv/volumes")
	if v.Name != "pvc-uid-data" || v.Spec.HostPath.Path != "/srv/volumes/ns-data-pvc-uid-data" || *v.Spec.HostPath.Type != corev1.HostPathDirectory {
		t.Errorf("name %s path %s", v.Name, v.Spec.HostPath.Path)
	}
	if v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || v.Spec.StorageClassName != "standard" || v.Annotations[AnnProvisionedBy] != ours {
		t.Errorf("policy %s class %s annotations %v", v.Spec.PersistentVolumeReclaimPolicy, v.Spec.StorageClassName, v.Annotations)
	}
	if Misfit(v, c) != "" || !BoundToClaim(v, c) {
		t.Errorf("provisioned volume does not serve its claim: %s", Misfit(v, c))
	}
	got, _ := Match(c, []*corev1.PersistentVolume{pv("other", "3Gi", withModes(rwx), withClass("standard")), v})
	if got != v {
		t.Errorf("the claim's own volume is not its match")
	}
}

func TestDirs(t *testing.T) {
	root := t.TempDir()
	d := Dirs{Root: root}
	c := pvc("data", "1Gi")
	v := ProvisionedVolume(c, class("standard", ours, false, 1), root)
	if err := d.Make(v); err != nil {
		t.Fatal(err)
	}
	if err := d.Make(v); err != nil {
		t.Fatalf("second Make: %v", err)
	}
	if fi, err := os.Stat(v.Spec.HostPath.Path); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("volume directory: %v %v", fi, err)
	}
	if err := d.Remove(v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.Spec.HostPath.Path); !os.IsNotExist(err) {
		t.Fatalf("directory left after Remove: %v", err)
	}
	if err := d.Remove(v); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	for _, p := range []string{root, root + "/..", "/etc", root + "/a/b", root + "/../x"} {
		bad := v.DeepCopy()
		bad.Spec.HostPath.Path = p
		if err := d.Remove(bad); err == nil {
			t.Errorf("Remove(%s) allowed outside %s", p, root)
		}
	}
}
