package volume

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"minik8s.io/shared/storageclass"
)

// Event reasons, Kubernetes' where it has them.
const (
	ReasonFailedBinding        = "FailedBinding"
	ReasonVolumeMismatch       = "VolumeMismatch"
	ReasonClaimLost            = "ClaimLost"
	ReasonClaimMisbound        = "ClaimMisbound"
	ReasonProvisioningFailed   = "ProvisioningFailed"
	ReasonExternalProvisioning = "ExternalProvisioning"
	ReasonProvisioning         = "ProvisioningSucceeded"
	ReasonVolumeFailedDelete   = "VolumeFailedDelete"
	ReasonVolumeDelete         = "VolumeDelete"
)

// Event is one event to report on the object a decision is about.
type Event struct {
	Type, Reason, Message string
}

// ClaimDecision is what to do about one claim. At most one of SetClass, Bind and Provision is
// set; Phase is the claim's phase otherwise.
type ClaimDecision struct {
	// SetClass is the default class to write into a claim that names none.
	SetClass string
	// Bind is the volume to bind the claim to (or to finish binding).
	Bind *corev1.PersistentVolume
	// Provision is the class to make a volume of for this claim.
	Provision *storagev1.StorageClass
	// Phase is the claim's phase when it is not being bound; "" leaves it.
	Phase corev1.PersistentVolumeClaimPhase
	Event *Event
}

// DecideClaim decides what a claim needs, from the volumes and classes there are, as
// Kubernetes' binder does. provisioner is ours: classes naming it get volumes from us; others
// are waited for. volume is the volume the claim names (nil when it names none or it does not
// exist).
func DecideClaim(c *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, classes []*storagev1.StorageClass, provisioner string) ClaimDecision {
	if c.DeletionTimestamp != nil {
		return ClaimDecision{}
	}
	if c.Spec.VolumeName == "" {
		return decideUnbound(c, volumes, classes, provisioner)
	}
	var pv *corev1.PersistentVolume
	for _, v := range volumes {
		if v.Name == c.Spec.VolumeName {
			pv = v
		}
	}
	switch {
	case pv == nil:
		if c.Status.Phase == corev1.ClaimBound || c.Status.Phase == corev1.ClaimLost {
			return ClaimDecision{Phase: corev1.ClaimLost, Event: &Event{corev1.EventTypeWarning, ReasonClaimLost,
				"Bound claim has lost its PersistentVolume. Data on the volume is lost!"}}
		}
		return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeNormal, ReasonFailedBinding,
			fmt.Sprintf("volume %q not found", c.Spec.VolumeName)}}
	case pv.Spec.ClaimRef == nil:
		// Pre-bound by the user to a free volume.
		if why := Misfit(pv, c); why != "" {
			return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeWarning, ReasonVolumeMismatch,
				fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, why)}}
		}
		return ClaimDecision{Bind: pv}
	case BoundToClaim(pv, c):
		return ClaimDecision{Bind: pv}
	case c.Annotations[AnnBoundByController] == "yes":
		return ClaimDecision{Phase: corev1.ClaimLost, Event: &Event{corev1.EventTypeWarning, ReasonClaimMisbound,
			"Two claims are bound to the same volume, this one is bound incorrectly"}}
	default:
		return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeWarning, ReasonFailedBinding,
			fmt.Sprintf("volume %q already bound to a different claim.", pv.Name)}}
	}
}

func decideUnbound(c *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, classes []*storagev1.StorageClass, provisioner string) ClaimDecision {
	_, annotated := c.Annotations[storageclass.BetaAnnotation]
	if c.Spec.StorageClassName == nil && !annotated {
		if def := DefaultClass(classes); def != nil {
			return ClaimDecision{SetClass: def.Name}
		}
	}
	pv, why := Match(c, volumes)
	if pv != nil {
		return ClaimDecision{Bind: pv}
	}
	class := storageclass.OfClaim(c)
	if class == "" {
		return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeNormal, ReasonFailedBinding,
			"no persistent volumes available for this claim and no storage class is set (" + why + ")"}}
	}
	var sc *storagev1.StorageClass
	for _, s := range classes {
		if s.Name == class {
			sc = s
		}
	}
	switch {
	case sc == nil:
		return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeWarning, ReasonProvisioningFailed,
			fmt.Sprintf("storageclass.storage.k8s.io %q not found (%s)", class, why)}}
	case sc.Provisioner == provisioner && provisioner != "":
		return ClaimDecision{Phase: corev1.ClaimPending, Provision: sc}
	default:
		return ClaimDecision{Phase: corev1.ClaimPending, Event: &Event{corev1.EventTypeNormal, ReasonExternalProvisioning,
			fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered. (%s)", sc.Provisioner, why)}}
	}
}

// BindVolume returns the volume with its claimRef pointing at the claim, or nil when it does
// already.
func BindVolume(pv *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	ref := pv.Spec.ClaimRef
	if ref != nil && ref.UID == c.UID && ref.Namespace == c.Namespace && ref.Name == c.Name {
		return nil
	}
	out := pv.DeepCopy()
	out.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}
	if ref == nil {
		setAnnotation(&out.ObjectMeta.Annotations, AnnBoundByController, "yes")
	}
	return out
}

// BindClaim returns the claim naming the volume and marked bound, or nil when it is already.
func BindClaim(c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) *corev1.PersistentVolumeClaim {
	if c.Spec.VolumeName == pv.Name && c.Annotations[AnnBindCompleted] == "yes" {
		return nil
	}
	out := c.DeepCopy()
	if out.Spec.VolumeName == "" {
		out.Spec.VolumeName = pv.Name
		setAnnotation(&out.Annotations, AnnBoundByController, "yes")
	}
	setAnnotation(&out.Annotations, AnnBindCompleted, "yes")
	return out
}

// ClaimStatus returns the claim with its status for phase (Bound: the volume's capacity and
// access modes), or nil when it has it already.
func ClaimStatus(c *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) *corev1.PersistentVolumeClaim {
	want := corev1.PersistentVolumeClaimStatus{Phase: phase}
	if phase == corev1.ClaimBound && pv != nil {
		want.AccessModes = pv.Spec.AccessModes
		want.Capacity = corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}
	}
	if phase == corev1.ClaimLost {
		// A lost claim keeps what it had, as Kubernetes leaves it.
		want.AccessModes, want.Capacity = c.Status.AccessModes, c.Status.Capacity
	}
	if c.Status.Phase == want.Phase && sameModes(c.Status.AccessModes, want.AccessModes) && sameStorage(c.Status.Capacity, want.Capacity) {
		return nil
	}
	out := c.DeepCopy()
	out.Status.Phase, out.Status.AccessModes, out.Status.Capacity = want.Phase, want.AccessModes, want.Capacity
	return out
}

func sameModes(a, b []corev1.PersistentVolumeAccessMode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameStorage(a, b corev1.ResourceList) bool {
	qa, oka := a[corev1.ResourceStorage]
	qb, okb := b[corev1.ResourceStorage]
	return oka == okb && qa.Cmp(qb) == 0
}

func setAnnotation(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}
