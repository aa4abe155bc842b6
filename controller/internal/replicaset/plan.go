package replicaset

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/podstatus"
	"minik8s.io/shared/reconcile"
)

// BurstReplicas caps how many pods one sync creates or deletes, as Kubernetes' controller does:
// a ReplicaSet scaled by thousands gets there over several syncs, and others get their turn.
const BurstReplicas = 500

// Kind is the ReplicaSet's group version kind, for owner references.
var Kind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Claim splits the pods of rs's namespace by what rs should do about them: owned are the active
// pods it controls whose labels match its selector; adopt are active orphans that match, which
// it should take (and then owns); release are pods it controls whose labels no longer match,
// whose reference it should drop. A ReplicaSet being deleted adopts nothing and releases
// nothing. Pods controlled by something else are not its business.
func Claim(rs *appsv1.ReplicaSet, pods []*corev1.Pod) (owned, adopt, release []*corev1.Pod, err error) {
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("spec.selector: %w", err)
	}
	deleting := rs.DeletionTimestamp != nil
	for _, p := range pods {
		matches := !sel.Empty() && sel.Matches(labels.Set(p.Labels))
		ref := metav1.GetControllerOfNoCopy(p)
		switch {
		case ref != nil && ref.UID == rs.UID:
			if matches {
				if Active(p) {
					owned = append(owned, p)
				}
			} else if !deleting {
				release = append(release, p)
			}
		case ref != nil:
			// Another controller's.
		case matches && !deleting && Active(p):
			adopt = append(adopt, p)
		}
	}
	return owned, adopt, release, nil
}

// Decision is what a sync should do about the number of pods.
type Decision struct {
	// Create is how many pods to create.
	Create int
	// Delete are the pods to delete, the ones Kubernetes would pick first.
	Delete []*corev1.Pod
}

// Decide compares the active pods rs controls with spec.replicas: too few means creating the
// difference, too many deleting the extra, ranked by RankForDeletion against related (rs's
// pods and its siblings', the pods owned by other ReplicaSets of its Deployment); both at most
// BurstReplicas per sync.
func Decide(rs *appsv1.ReplicaSet, owned, related []*corev1.Pod) Decision {
	want := int(replicas(rs))
	diff := len(owned) - want
	switch {
	case diff < 0:
		return Decision{Create: min(-diff, BurstReplicas)}
	case diff > 0:
		victims := append([]*corev1.Pod(nil), owned...)
		RankForDeletion(victims, related)
		return Decision{Delete: victims[:min(diff, BurstReplicas)]}
	}
	return Decision{}
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// Condition reasons, Kubernetes' own.
const (
	ReasonFailedCreate = reconcile.EventFailedCreate
	ReasonFailedDelete = reconcile.EventFailedDelete
)

// Status is rs's status given the active pods it controls after a sync, the error that sync's
// creations or deletions met (nil when none; failedCreate tells which), and the time. It also
// returns when a ready pod becomes available (minReadySeconds), 0 when none waits, so the
// controller can look again then.
func Status(rs *appsv1.ReplicaSet, owned []*corev1.Pod, manageErr error, failedCreate bool, now time.Time) (appsv1.ReplicaSetStatus, time.Duration) {
	st := appsv1.ReplicaSetStatus{
		Replicas:           int32(len(owned)),
		ObservedGeneration: rs.Generation,
		Conditions:         append([]appsv1.ReplicaSetCondition(nil), rs.Status.Conditions...),
	}
	tmpl := labels.Set(rs.Spec.Template.Labels)
	var next time.Duration
	for _, p := range owned {
		if tmpl.AsSelector().Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if podstatus.Ready(p) {
			st.ReadyReplicas++
		}
		if ok, wait := podstatus.Available(p, rs.Spec.MinReadySeconds, now); ok {
			st.AvailableReplicas++
		} else if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	failure := -1
	for i, c := range st.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			failure = i
		}
	}
	switch {
	case manageErr != nil && failure < 0:
		reason := ReasonFailedDelete
		if failedCreate {
			reason = ReasonFailedCreate
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure >= 0:
		st.Conditions = append(st.Conditions[:failure], st.Conditions[failure+1:]...)
	}
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	return st, next
}

// StatusChanged reports whether st differs from what rs holds.
func StatusChanged(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) bool {
	old := rs.Status
	if len(old.Conditions) == 0 {
		old.Conditions = nil
	}
	// terminatingReplicas is not reported here; keep whatever is stored.
	st.TerminatingReplicas = old.TerminatingReplicas
	return !apiequality.Semantic.DeepEqual(old, st)
}

// StatusInterval is how often a ReplicaSet's status is rewritten while only its pod counts move
// on the way to spec.replicas: while hundreds of pods start, each one's readiness would
// otherwise cost a status write (and a sync of its Deployment, and another write there).
const StatusInterval = 250 * time.Millisecond

// StatusDue says whether st should be written now, given the stored status and when the last
// write was, and otherwise how long to wait. A new generation, a change of conditions, and
// counts that reach spec.replicas (all ready and available: what a rollout waits for) or go
// down are written at once; counts still rising at most every StatusInterval.
func StatusDue(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus, lastWrite, now time.Time) (bool, time.Duration) {
	old := rs.Status
	want := replicas(rs)
	switch {
	case !StatusChanged(rs, st):
		return false, 0
	case st.ObservedGeneration != old.ObservedGeneration || !apiequality.Semantic.DeepEqual(old.Conditions, st.Conditions):
		return true, 0
	case st.Replicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want:
		return true, 0
	case st.Replicas < old.Replicas || st.ReadyReplicas < old.ReadyReplicas || st.AvailableReplicas < old.AvailableReplicas:
		return true, 0
	}
	if wait := lastWrite.Add(StatusInterval).Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// PodFromTemplate is a new pod of rs, an object of kind owner seen as a ReplicaSet: its
// template's labels, annotations, finalizers and spec, a name generated from rs's, and a
// controller reference to rs that blocks rs's deletion in the foreground until the pod is gone.
func PodFromTemplate(rs *appsv1.ReplicaSet, owner schema.GroupVersionKind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: rs.Name + "-",
			Namespace:    rs.Namespace,
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{
				OwnerRef(rs.ObjectMeta, owner),
			},
		},
		Spec: t.Spec,
	}
}

// OwnerRef is a controller reference to an object of kind gvk.
func OwnerRef(owner metav1.ObjectMeta, gvk schema.GroupVersionKind) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.Name, UID: owner.UID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}
}
