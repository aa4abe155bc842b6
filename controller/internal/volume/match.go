package volume

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik8s.io/shared/storageclass"
)

// Annotations Kubernetes' binder and provisioners write, kept so tools that read them work.
const (
	AnnBindCompleted     = "pv.kubernetes.io/bind-completed"
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	AnnProvisionedBy     = "pv.kubernetes.io/provisioned-by"
	AnnDefaultClass      = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultClass  = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultClass reports whether a class carries the default annotation.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[AnnDefaultClass] == "true" || sc.Annotations[annBetaDefaultClass] == "true"
}

// DefaultClass is the default class among classes: the newest of those marked so (as
// Kubernetes picks when several are), or nil.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if !IsDefaultClass(sc) {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	return best
}

// BoundToClaim reports whether a volume's claimRef names the claim: same namespace and name,
// and the claim's uid unless the reference has none (a volume pre-bound by name).
func BoundToClaim(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) bool {
	ref := v.Spec.ClaimRef
	if ref == nil || ref.Namespace != c.Namespace || ref.Name != c.Name {
		return false
	}
	return ref.UID == "" || ref.UID == c.UID
}

// Misfit says why a volume cannot serve a claim, or "" when it can. It checks what a volume
// must offer whoever bound it: class, size, access modes and volume mode.
func Misfit(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) string {
	if storageclass.OfVolume(v) != storageclass.OfClaim(c) {
		return fmt.Sprintf("storage class %q, claim asks for %q", storageclass.OfVolume(v), storageclass.OfClaim(c))
	}
	want := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if has := v.Spec.Capacity[corev1.ResourceStorage]; has.Cmp(want) < 0 {
		return fmt.Sprintf("capacity %s is less than the %s requested", has.String(), want.String())
	}
	for _, m := range c.Spec.AccessModes {
		if !slices.Contains(v.Spec.AccessModes, m) {
			return fmt.Sprintf("access modes %s lack %s", modes(v.Spec.AccessModes), m)
		}
	}
	if volumeMode(v.Spec.VolumeMode) != volumeMode(c.Spec.VolumeMode) {
		return fmt.Sprintf("volume mode %s, claim asks for %s", volumeMode(v.Spec.VolumeMode), volumeMode(c.Spec.VolumeMode))
	}
	return ""
}

// Match finds the volume a claim without a volume should bind to: a volume already bound to
// it (pre-bound, or half-bound by an earlier sync) if it fits, otherwise the smallest Available
// volume that fits, matches the claim's selector and is bound to no one (fewer access modes,
// then name, break ties). Without one, it says why, counting the volumes by what excluded
// them.
func Match(c *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume) (*corev1.PersistentVolume, string) {
	var sel labels.Selector
	if c.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(c.Spec.Selector)
		if err != nil {
			return nil, "invalid selector: " + err.Error()
		}
		sel = s
	}
	why := map[string]int{}
	var best *corev1.PersistentVolume
	for _, v := range volumes {
		if v.DeletionTimestamp != nil {
			why["being deleted"]++
			continue
		}
		misfit := Misfit(v, c)
		if BoundToClaim(v, c) {
			if misfit == "" {
				return v, ""
			}
			why["pre-bound to this claim but "+misfit]++
			continue
		}
		switch {
		case v.Spec.ClaimRef != nil:
			why["bound to another claim"]++
		case v.Status.Phase != corev1.VolumeAvailable:
			why["not Available"]++
		case sel != nil && !sel.Matches(labels.Set(v.Labels)):
			why["not matching the selector"]++
		case storageclass.OfVolume(v) != storageclass.OfClaim(c):
			why["of another storage class"]++
		case misfit != "" && strings.HasPrefix(misfit, "capacity"):
			why["too small"]++
		case misfit != "" && strings.HasPrefix(misfit, "access modes"):
			why["lacking access modes"]++
		case misfit != "":
			why["of another volume mode"]++
		case best == nil || better(v, best):
			best = v
		}
	}
	if best != nil {
		return best, ""
	}
	if len(volumes) == 0 {
		return nil, "no persistent volumes exist"
	}
	reasons := make([]string, 0, len(why))
	for r, n := range why {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	return nil, fmt.Sprintf("0/%d persistent volumes match: %s", len(volumes), strings.Join(reasons, ", "))
}

// better orders fitting volumes: smaller first, then fewer access modes, then name.
func better(a, b *corev1.PersistentVolume) bool {
	qa, qb := a.Spec.Capacity[corev1.ResourceStorage], b.Spec.Capacity[corev1.ResourceStorage]
	if d := qa.Cmp(qb); d != 0 {
		return d < 0
	}
	if len(a.Spec.AccessModes) != len(b.Spec.AccessModes) {
		return len(a.Spec.AccessModes) < len(b.Spec.AccessModes)
	}
	return a.Name < b.Name
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

func modes(ms []corev1.PersistentVolumeAccessMode) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return "[" + strings.Join(s, ",") + "]"
}
