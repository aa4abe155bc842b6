package framework

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Reasons of the volume checks, worded as Kubernetes' VolumeBinding plugin words them.
const (
	ReasonUnboundClaims          = "pod has unbound immediate PersistentVolumeClaims"
	ReasonVolumeNodeAffinity     = "node(s) had volume node affinity conflict"
	reasonClaimNotFoundFmt       = "persistentvolumeclaim %q not found"
	reasonClaimBeingDeletedFmt   = "persistentvolumeclaim %q is being deleted"
	reasonClaimLostFmt           = "persistentvolumeclaim %q bound to non-existent persistentvolume %q"
	reasonBoundToOtherClaimFmt   = "persistentvolume %q is bound to another claim"
	reasonVolumeBeingDeletedFmt  = "persistentvolume %q is being deleted"
	reasonVolumeNotFoundForClaim = "persistentvolume %q of claim %q not found"
)

// Volumes is what the volume checks read: the scheduler's caches of claims and volumes.
type Volumes interface {
	Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool)
	Volume(name string) (*corev1.PersistentVolume, bool)
}

// claimNames are the claims pod's volumes name, in order, each once.
func claimNames(pod *corev1.Pod) []string {
	var names []string
	seen := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil || seen[v.PersistentVolumeClaim.ClaimName] {
			continue
		}
		seen[v.PersistentVolumeClaim.ClaimName] = true
		names = append(names, v.PersistentVolumeClaim.ClaimName)
	}
	return names
}

// CheckClaims is the pod-level step before the nodes are looked at (Kubernetes' VolumeBinding
// PreFilter): every claim the pod names must exist, not be being deleted, and be bound to a
// volume that exists and names it. It returns "" when the pod may go on to the filters, else
// why it cannot be placed anywhere yet; the pod is retried when a claim or volume changes.
func CheckClaims(pod *corev1.Pod, vols Volumes) string {
	unbound := false
	for _, name := range claimNames(pod) {
		claim, ok := vols.Claim(pod.Namespace, name)
		switch {
		case !ok:
			return fmt.Sprintf(reasonClaimNotFoundFmt, name)
		case claim.DeletionTimestamp != nil:
			return fmt.Sprintf(reasonClaimBeingDeletedFmt, name)
		case claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound:
			if claim.Status.Phase == corev1.ClaimLost {
				return fmt.Sprintf(reasonClaimLostFmt, name, claim.Spec.VolumeName)
			}
			unbound = true
			continue
		}
		pv, ok := vols.Volume(claim.Spec.VolumeName)
		switch {
		case !ok:
			return fmt.Sprintf(reasonVolumeNotFoundForClaim, claim.Spec.VolumeName, name)
		case pv.DeletionTimestamp != nil:
			return fmt.Sprintf(reasonVolumeBeingDeletedFmt, pv.Name)
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID:
			return fmt.Sprintf(reasonBoundToOtherClaimFmt, pv.Name)
		}
	}
	if unbound {
		return ReasonUnboundClaims
	}
	return ""
}

// VolumeNodeAffinity is the filter for the volumes the pod's bound claims use: a volume with
// a required node affinity (a local volume, say) can only be used on the nodes it selects.
// Claims CheckClaims let through are bound, so a missing one here is only a cache racing
// ahead, and is left to the next attempt.
func VolumeNodeAffinity(vols Volumes) Filter {
	return Filter{Name: "VolumeNodeAffinity", Fn: func(p *PodInfo, n *NodeInfo) []string {
		for _, name := range claimNames(p.Pod) {
			claim, ok := vols.Claim(p.Pod.Namespace, name)
			if !ok || claim.Spec.VolumeName == "" {
				continue
			}
			pv, ok := vols.Volume(claim.Spec.VolumeName)
			if !ok || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
				continue
			}
			if !MatchNodeSelectorTerms(pv.Spec.NodeAffinity.Required.NodeSelectorTerms, n.Node) {
				return []string{ReasonVolumeNodeAffinity}
			}
		}
		return nil
	}}
}
