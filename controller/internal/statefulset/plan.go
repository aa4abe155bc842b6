package statefulset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/podstatus"
)

// Kind is the StatefulSet's group, version and kind, for owner references.
var Kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Labels a StatefulSet's pods carry, as upstream sets them.
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
)

// PodName is the name of set's pod of ordinal.
func PodName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// Ordinal is the ordinal in pod's name when it is a pod of the StatefulSet called setName,
// and -1 otherwise.
func Ordinal(setName string, pod *corev1.Pod) int {
	rest, ok := strings.CutPrefix(pod.Name, setName+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// ClaimName is the name of the claim made from template for set's pod of ordinal:
// <template>-<set>-<ordinal>.
func ClaimName(template string, set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, ordinal)
}

// startOrdinal is the first ordinal of set (spec.ordinals.start, 0 by default).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicaCount(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// inRange reports whether ordinal is one set should have a pod for.
func inRange(set *appsv1.StatefulSet, ordinal int) bool {
	start := startOrdinal(set)
	return ordinal >= start && ordinal < start+replicaCount(set)
}

// Revision is the revision hash label of a pod.
func Revision(pod *corev1.Pod) string { return pod.Labels[history.HashLabel] }

// available is a pod running, not terminating and ready for the set's minReadySeconds at now:
// what OrderedReady and a rolling update wait for.
func available(set *appsv1.StatefulSet, p *corev1.Pod, now time.Time) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	ok, _ := podstatus.Available(p, set.Spec.MinReadySeconds, now)
	return ok
}

func failed(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// Plan is what one sync does: give the pods of Fix back their identity labels, make the pods
// of Create (ordinals, in order, each after its claims), then delete Delete (in order).
// Waiting names the pod the sync waits on, if any.
type Plan struct {
	Fix     []*corev1.Pod
	Create  []int
	Delete  []*corev1.Pod
	Waiting string
}

// IdentityMatches reports whether pod carries its identity labels: its name in
// statefulset.kubernetes.io/pod-name and its ordinal in apps.kubernetes.io/pod-index.
func IdentityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	o := Ordinal(set.Name, pod)
	return o >= 0 && pod.Namespace == set.Namespace && pod.Labels[PodNameLabel] == pod.Name && pod.Labels[PodIndexLabel] == strconv.Itoa(o)
}

// IdentityLabels are the labels that carry pod's identity: its name and its ordinal.
func IdentityLabels(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]string {
	return map[string]string{PodNameLabel: pod.Name, PodIndexLabel: strconv.Itoa(Ordinal(set.Name, pod))}
}

// Decide is upstream's StatefulSet update, one sync of it at now: failed pods are deleted to
// be made again; pods that lost their identity labels get them back in place; missing
// ordinals are created, in order and one at a time under OrderedReady (each waiting for the
// one before to be Running, Ready and Available, that is ready for minReadySeconds), all at
// once under Parallel; pods beyond the replicas go from the highest ordinal down; and under
// RollingUpdate, once every pod is available, the highest pod at or above the partition not
// at updateRevision is deleted, one at a time, to come back updated. pods are the set's own
// pods.
func Decide(set *appsv1.StatefulSet, pods []*corev1.Pod, updateRevision string, now time.Time) Plan {
	var plan Plan
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	start, n := startOrdinal(set), replicaCount(set)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range pods {
		o := Ordinal(set.Name, p)
		if inRange(set, o) {
			replicas[o-start] = p
		} else if o >= 0 {
			condemned = append(condemned, p)
		}
	}
	// Highest ordinal first, as pods beyond the replicas are removed.
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int { return Ordinal(set.Name, b) - Ordinal(set.Name, a) })

	unhealthy := false
	for i, p := range replicas {
		ordinal := start + i
		switch {
		case p == nil:
			plan.Create = append(plan.Create, ordinal)
			if monotonic {
				plan.Waiting = PodName(set, ordinal)
				return plan
			}
			continue
		case failed(p) && p.DeletionTimestamp == nil:
			// A pod that ended is deleted and made again under its name.
			plan.Delete = append(plan.Delete, p)
			if monotonic {
				plan.Waiting = p.Name
				return plan
			}
			continue
		}
		if p.DeletionTimestamp == nil && !IdentityMatches(set, p) {
			plan.Fix = append(plan.Fix, p)
		}
		if !available(set, p, now) {
			unhealthy = true
			if monotonic {
				plan.Waiting = p.Name
				return plan
			}
		}
	}

	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if monotonic {
				// One at a time: wait for it to go.
				plan.Waiting = p.Name
				return plan
			}
			continue
		}
		if monotonic && unhealthy {
			return plan
		}
		plan.Delete = append(plan.Delete, p)
		if monotonic {
			plan.Waiting = p.Name
			return plan
		}
	}
	if len(plan.Delete) > 0 || len(plan.Create) > 0 || len(plan.Fix) > 0 {
		// Parallel scaling and identities first; the rollout follows once they are done.
		return plan
	}

	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return plan // OnDelete: pods are updated when the user deletes them
	}
	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	for i := len(replicas) - 1; i >= 0 && start+i >= partition; i-- {
		p := replicas[i]
		if Revision(p) != updateRevision && p.DeletionTimestamp == nil {
			plan.Delete = append(plan.Delete, p)
			plan.Waiting = p.Name
			return plan
		}
		if !available(set, p, now) {
			plan.Waiting = p.Name
			return plan
		}
	}
	return plan
}

// RevisionFor is the revision the new pod of ordinal is made from: the current one below the
// partition of a RollingUpdate, the update revision otherwise, as upstream.
func RevisionFor(set *appsv1.StatefulSet, ordinal int, currentRevision, updateRevision string) string {
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		ru := set.Spec.UpdateStrategy.RollingUpdate
		if (ru == nil && ordinal < int(set.Status.CurrentReplicas)) || (ru != nil && ru.Partition != nil && ordinal < int(*ru.Partition)) {
			return currentRevision
		}
	}
	return updateRevision
}

// NewPod is set's pod of ordinal made from template (the revision's) labelled with revision:
// named <set>-<ordinal>, with that name as hostname and spec.serviceName as subdomain, its
// identity labels, and a volume per claim template naming the ordinal's claim.
func NewPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, ordinal int, revision string) *corev1.Pod {
	name := PodName(set, ordinal)
	labels := maps.Clone(template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PodNameLabel] = name
	labels[PodIndexLabel] = strconv.Itoa(ordinal)
	labels[history.HashLabel] = revision
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace, Labels: labels,
			Annotations:     maps.Clone(template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, Kind)},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	for _, c := range set.Spec.VolumeClaimTemplates {
		src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(c.Name, set, ordinal)}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == c.Name {
				pod.Spec.Volumes[i].VolumeSource, replaced = src, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: src})
		}
	}
	return pod
}

// NewClaims are the claims of set's pod of ordinal, from its claim templates, labelled with
// the selector's labels as upstream.
func NewClaims(set *appsv1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		c := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c.Name = ClaimName(c.Name, set, ordinal)
		c.Namespace = set.Namespace
		c.ResourceVersion, c.UID = "", ""
		c.Status = corev1.PersistentVolumeClaimStatus{}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
		}
		out = append(out, c)
	}
	return out
}

// ClaimOwners are the owner references the claim of ordinal should carry under set's
// persistentVolumeClaimRetentionPolicy, as upstream: whenDeleted Delete makes set an owner
// of the claims of its replicas (they go with it), whenScaled Delete makes a condemned pod
// the owner of its claims (they go with it); references to set or to pod the policy does not
// ask for are dropped, others kept. pod may be nil.
func ClaimOwners(set *appsv1.StatefulSet, claim *corev1.PersistentVolumeClaim, pod *corev1.Pod, ordinal int) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range claim.OwnerReferences {
		if r.UID == set.UID || (pod != nil && r.UID == pod.UID) {
			continue
		}
		out = append(out, r)
	}
	policy := set.Spec.PersistentVolumeClaimRetentionPolicy
	if policy == nil {
		policy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	deleted := policy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	scaled := policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	if inRange(set, ordinal) {
		if deleted {
			out = append(out, metav1.OwnerReference{APIVersion: Kind.GroupVersion().String(), Kind: Kind.Kind, Name: set.Name, UID: set.UID})
		}
	} else if scaled && pod != nil {
		out = append(out, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID})
	} else if deleted {
		// A condemned pod's claim stays with the set until the pod is gone.
		out = append(out, metav1.OwnerReference{APIVersion: Kind.GroupVersion().String(), Kind: Kind.Kind, Name: set.Name, UID: set.UID})
	}
	return out
}

// sameOwners reports whether two lists of owner references name the same owners.
func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	uids := map[string]bool{}
	for _, r := range a {
		uids[string(r.UID)] = true
	}
	for _, r := range b {
		if !uids[string(r.UID)] {
			return false
		}
	}
	return true
}

// TemplateOf reads the pod template a revision holds (history.TemplatePatch's data).
func TemplateOf(r *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("revision %s: %w", r.Name, err)
	}
	return &data.Spec.Template, nil
}

// Status is set's status from its pods: counts by readiness, availability (ready for
// minReadySeconds) and revision, with the rollout complete (current = update) once every
// pod is updated and ready under RollingUpdate. next is when a ready pod becomes available.
func Status(set *appsv1.StatefulSet, pods []*corev1.Pod, currentRevision, updateRevision string, collisionCount int32, now time.Time) (st appsv1.StatefulSetStatus, next time.Duration) {
	st = appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    currentRevision,
		UpdateRevision:     updateRevision,
		CollisionCount:     &collisionCount,
		Conditions:         set.Status.Conditions,
	}
	for _, p := range pods {
		if Ordinal(set.Name, p) < 0 {
			continue
		}
		st.Replicas++
		if p.Status.Phase == corev1.PodRunning && podstatus.Ready(p) {
			st.ReadyReplicas++
			if ok, wait := podstatus.Available(p, set.Spec.MinReadySeconds, now); ok {
				st.AvailableReplicas++
			} else if wait > 0 && (next == 0 || wait < next) {
				next = wait
			}
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if Revision(p) == currentRevision {
			st.CurrentReplicas++
		}
		if Revision(p) == updateRevision {
			st.UpdatedReplicas++
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = updateRevision
	}
	return st, next
}
