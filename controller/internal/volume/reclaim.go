package volume

import (
	corev1 "k8s.io/api/core/v1"
)

// VolumeAction is what a volume's sync does besides setting its phase.
type VolumeAction int

const (
	// Keep: nothing beyond the phase.
	Keep VolumeAction = iota
	// SyncClaim: the claim the volume is reserved for still has to take it; queue the claim.
	SyncClaim
	// Unbind: the volume was bound by the controller to a claim that took another volume;
	// clear its claimRef so it is Available again.
	Unbind
	// Delete: the claim is gone and the policy is Delete on a volume we provisioned: remove
	// its directory, then the volume.
	Delete
)

// VolumeDecision is what to do about one volume.
type VolumeDecision struct {
	Action VolumeAction
	// Phase, Reason and Message are the status the volume should have; Phase "" leaves it.
	Phase           corev1.PersistentVolumePhase
	Reason, Message string
	Event           *Event
}

// DecideVolume decides a volume's phase and reclaim, as Kubernetes' binder does. claim is
// the claim its claimRef names, looked up by namespace and name (nil when none exists).
// provisioner is ours: only volumes it provisioned can be deleted.
func DecideVolume(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim, provisioner string) VolumeDecision {
	if pv.DeletionTimestamp != nil {
		return VolumeDecision{}
	}
	ref := pv.Spec.ClaimRef
	switch {
	case ref == nil:
		return VolumeDecision{Phase: corev1.VolumeAvailable}
	case ref.UID == "":
		// Pre-bound by name to a claim that has not taken it yet.
		act := Keep
		if claim != nil {
			act = SyncClaim
		}
		return VolumeDecision{Action: act, Phase: corev1.VolumeAvailable}
	case claim == nil || claim.UID != ref.UID:
		return reclaim(pv, provisioner)
	case claim.Spec.VolumeName == "":
		return VolumeDecision{Action: SyncClaim, Phase: pv.Status.Phase}
	case claim.Spec.VolumeName == pv.Name:
		return VolumeDecision{Phase: corev1.VolumeBound}
	case pv.Annotations[AnnBoundByController] == "yes":
		return VolumeDecision{Action: Unbind, Phase: corev1.VolumeAvailable}
	default:
		// The user bound this volume to a claim that took another; wait for them.
		return VolumeDecision{Phase: pv.Status.Phase}
	}
}

// reclaim handles a volume whose claim is gone.
func reclaim(pv *corev1.PersistentVolume, provisioner string) VolumeDecision {
	if pv.Status.Phase == corev1.VolumeFailed {
		return VolumeDecision{Phase: corev1.VolumeFailed, Reason: pv.Status.Reason, Message: pv.Status.Message}
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if provisioner == "" || pv.Annotations[AnnProvisionedBy] != provisioner {
			msg := "no deleter for this volume: only volumes provisioned by " + provisioner + " are deleted"
			return VolumeDecision{Phase: corev1.VolumeFailed, Reason: ReasonVolumeFailedDelete, Message: msg,
				Event: &Event{corev1.EventTypeWarning, ReasonVolumeFailedDelete, msg}}
		}
		return VolumeDecision{Action: Delete, Phase: corev1.VolumeReleased}
	case corev1.PersistentVolumeReclaimRecycle:
		msg := "recycling is not supported; delete the volume's data and its claimRef by hand"
		return VolumeDecision{Phase: corev1.VolumeFailed, Reason: "VolumeFailedRecycle", Message: msg,
			Event: &Event{corev1.EventTypeWarning, "VolumeFailedRecycle", msg}}
	default:
		// Retain: the data stays, and so does the claimRef, until an administrator clears it.
		return VolumeDecision{Phase: corev1.VolumeReleased}
	}
}

// VolumeStatus returns the volume with the decided status, or nil when it has it.
func VolumeStatus(pv *corev1.PersistentVolume, d VolumeDecision) *corev1.PersistentVolume {
	if d.Phase == "" || (pv.Status.Phase == d.Phase && pv.Status.Reason == d.Reason && pv.Status.Message == d.Message) {
		return nil
	}
	out := pv.DeepCopy()
	out.Status.Phase, out.Status.Reason, out.Status.Message = d.Phase, d.Reason, d.Message
	return out
}

// UnbindVolume returns the volume without its claimRef and the controller's binding mark.
func UnbindVolume(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	out := pv.DeepCopy()
	out.Spec.ClaimRef = nil
	delete(out.Annotations, AnnBoundByController)
	return out
}
