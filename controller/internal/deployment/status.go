package deployment

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and event reasons, Kubernetes' own (kubectl rollout status reads some).
const (
	ReasonNewRSCreated         = "NewReplicaSetCreated"
	ReasonFoundNewRS           = "FoundNewReplicaSet"
	ReasonRSUpdated            = "ReplicaSetUpdated"
	ReasonNewRSAvailable       = "NewReplicaSetAvailable"
	ReasonTimedOut             = "ProgressDeadlineExceeded"
	ReasonPaused               = "DeploymentPaused"
	ReasonResumed              = "DeploymentResumed"
	ReasonFailedRSCreate       = "ReplicaSetCreateError"
	ReasonMinimumAvailable     = "MinimumReplicasAvailable"
	ReasonMinimumUnavailable   = "MinimumReplicasUnavailable"
	ReasonScalingReplicaSet    = "ScalingReplicaSet"
	ReasonSelectingAll         = "SelectingAll"
	messageMinimumAvailable    = "Deployment has minimum availability."
	messageMinimumNotAvailable = "Deployment does not have minimum availability."
)

func condition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

// setCondition puts c in st as Kubernetes does: a condition of the same status and reason is
// left alone (times and message included); the same status keeps its transition time.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := condition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	out := st.Conditions[:0:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

func hasDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// pausedConditions marks a paused Deployment's progress Unknown (DeploymentPaused), and a
// resumed one's (DeploymentResumed), unless it has timed out already.
func (p *planner) pausedConditions() {
	if !hasDeadline(p.d) {
		return
	}
	cur := condition(p.d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return
	}
	pausedCond := cur != nil && cur.Reason == ReasonPaused
	switch {
	case p.d.Spec.Paused && !pausedCond:
		setCondition(&p.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", p.in.Now))
	case !p.d.Spec.Paused && pausedCond:
		setCondition(&p.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", p.in.Now))
	}
}

// status counts the pods of every ReplicaSet as their statuses report them, and sets
// Available: at least replicas - maxUnavailable pods available.
func (p *planner) status() appsv1.DeploymentStatus {
	d := p.d
	st := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		CollisionCount:     d.Status.CollisionCount,
		Conditions:         append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	var total int32
	for _, rs := range p.all() {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
		total += rsReplicas(rs)
	}
	if p.newRS != nil {
		st.UpdatedReplicas = p.newRS.Status.Replicas
	}
	st.UnavailableReplicas = max(total-st.AvailableReplicas, 0)
	if st.AvailableReplicas >= replicas(d)-MaxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, messageMinimumAvailable, p.in.Now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumUnavailable, messageMinimumNotAvailable, p.in.Now))
	}
	return st
}

// complete: every pod is of the new template and available, and the status describes the
// current generation.
func complete(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	n := replicas(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// progressing: the new ReplicaSet grew, an old one shrank, or more pods are ready or
// available than the stored status says.
func progressing(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

func timedOut(d *appsv1.Deployment, st appsv1.DeploymentStatus, now time.Time) bool {
	c := condition(st, appsv1.DeploymentProgressing)
	if !hasDeadline(d) || c == nil || c.Reason == ReasonNewRSAvailable {
		return false
	}
	if c.Reason == ReasonTimedOut {
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// progress sets the Progressing condition of a rollout (complete, progressing or past its
// deadline), copies a ReplicaSet's ReplicaFailure, and works out when the deadline needs
// checking again.
func (p *planner) progress(st *appsv1.DeploymentStatus) {
	d, now := p.d, p.in.Now
	if !hasDeadline(d) {
		removeCondition(st, appsv1.DeploymentProgressing)
	}
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	subject := fmt.Sprintf("Deployment %q", d.Name)
	if p.newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", p.newRS.Name)
	}
	if hasDeadline(d) && !done {
		switch {
		case complete(d, *st):
			setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, subject+" has successfully progressed.", now))
		case progressing(d, *st):
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, subject+" is progressing.", now)
			if cur != nil && cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(st, appsv1.DeploymentProgressing)
			setCondition(st, c)
		case timedOut(d, *st, now):
			setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, subject+" has timed out progressing.", now))
		}
	}
	if f := replicaFailure(p.newRS, p.all()); f != nil {
		setCondition(st, *f)
	} else {
		removeCondition(st, appsv1.DeploymentReplicaFailure)
	}
	// A rollout that is not done needs a look when its deadline passes, even if nothing
	// else happens.
	if c := condition(*st, appsv1.DeploymentProgressing); hasDeadline(d) && c != nil && c.Status == corev1.ConditionTrue &&
		c.Reason != ReasonNewRSAvailable && !complete(d, *st) {
		at := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
		p.plan.RequeueAfter = max(at.Sub(now), 0) + time.Second
	}
}

// replicaFailure is the new ReplicaSet's ReplicaFailure condition (or any ReplicaSet's) as a
// Deployment condition.
func replicaFailure(newRS *appsv1.ReplicaSet, all []*appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, all...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason,
					Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime}
			}
		}
	}
	return nil
}
