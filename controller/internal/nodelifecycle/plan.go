package nodelifecycle

import (
	"github.com/go-logr/logr"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names the controller writes, as Kubernetes spells them so tools and users recognise them.
const (
	// TaintUnreachable is put on a node whose kubelet stopped renewing its Lease.
	TaintUnreachable = "node.kubernetes.io/unreachable"

	ReasonNodeStatusUnknown = "NodeStatusUnknown"
	MessageStatusUnknown    = "Kubelet stopped posting node status."
	ReasonNeverUpdated      = "NodeStatusNeverUpdated"
	MessageNeverUpdated     = "Kubelet never posted node status."
	// ReasonPodNodeNotReady is the reason of the Ready=False condition set on pods of a lost
	// node.
	ReasonPodNodeNotReady = "NodeNotReady"
)

// nodeConditionTypes are the conditions the kubelet reports; all of them become Unknown
// when it goes silent, since nothing is known about any of them any more.
var nodeConditionTypes = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// Settings are the controller's timing knobs.
type Settings struct {
	// GracePeriod is how old a Lease may get before its node counts as unreachable.
	GracePeriod time.Duration
	// DefaultToleration is how long pods without their own toleration of the unreachable
	// taint stay on an unreachable node.
	DefaultToleration time.Duration
}

// Input is everything a decision about one node depends on.
type Input struct {
	// Node is nil when the Node no longer exists.
	Node *corev1.Node
	// Lease is the node's Lease in kube-node-lease; nil when missing.
	Lease *coordinationv1.Lease
	// Pods are the pods bound to the node.
	Pods []*corev1.Pod
	Now  time.Time
	// ObservedSince is when this controller began watching. Heartbeats older than that count
	// from it, so a restarted controller gives every node a full grace period before judging
	// it, as Kubernetes' probe timestamps do.
	ObservedSince time.Time
}

// Plan is what should be done about one node. The zero Plan does nothing.
type Plan struct {
	// Unreachable says the node's Lease is older than the grace period.
	Unreachable bool
	// BecameUnreachable is set on the first decision that finds the node unreachable (its
	// Ready condition is not Unknown yet), the moment to tell users.
	BecameUnreachable bool
	// Conditions, when non-nil, replace the node's status conditions.
	Conditions []corev1.NodeCondition
	// Taints, when TaintsChanged, replace the node's spec.taints.
	Taints        []corev1.Taint
	TaintsChanged bool
	// PodsNotReady are copies of pods with their Ready condition set to False, to write.
	PodsNotReady []*corev1.Pod
	// Evict are pods whose toleration of the unreachable taint ran out: delete gracefully.
	Evict []*corev1.Pod
	// ForceDelete are pods of a deleted node: delete with grace period 0.
	ForceDelete []*corev1.Pod
	// RequeueAfter, when positive, is when the node needs another look (its Lease expires,
	// or a pod's toleration ends).
	RequeueAfter time.Duration
}

// Decide is the node lifecycle decision: a pure function of the node, its Lease, its pods and
// the time.
func Decide(in Input, s Settings) Plan {
	if in.Node == nil {
		var p Plan
		for _, pod := range in.Pods {
			p.ForceDelete = append(p.ForceDelete, pod)
		}
		return p
	}
	expires := LastHeartbeat(in.Node, in.Lease, in.ObservedSince).Add(s.GracePeriod)
	if in.Now.Before(expires) {
		return decideReachable(in, expires)
	}
	return decideUnreachable(in, s)
}

func decideReachable(in Input, expires time.Time) Plan {
	p := Plan{RequeueAfter: expires.Sub(in.Now)}
	if taints, changed := withoutUnreachableTaints(in.Node.Spec.Taints); changed {
		p.Taints, p.TaintsChanged = taints, true
	}
	return p
}

func decideUnreachable(in Input, s Settings) Plan {
	p := Plan{Unreachable: true}
	if conds, changed := unknownConditions(in.Node.Status.Conditions, in.Now); changed {
		p.Conditions = conds
	}
	p.BecameUnreachable = readyStatus(in.Node) != corev1.ConditionUnknown
	taints, changed := withUnreachableTaints(in.Node.Spec.Taints, in.Now)
	if changed {
		p.Taints, p.TaintsChanged = taints, true
	}
	tainted := in.Now
	for _, t := range taints {
		if t.Key == TaintUnreachable && t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded != nil {
			tainted = t.TimeAdded.Time
		}
	}
	var next time.Duration
	for _, pod := range in.Pods {
		if pod.DeletionTimestamp != nil {
			continue // already on its way out
		}
		if marked, changed := podNotReady(pod, in.Now); changed {
			p.PodsNotReady = append(p.PodsNotReady, marked)
		}
		d, forever := Toleration(pod, s.DefaultToleration)
		if forever {
			continue
		}
		if due := tainted.Add(d); !in.Now.Before(due) {
			p.Evict = append(p.Evict, pod)
		} else if wait := due.Sub(in.Now); next == 0 || wait < next {
			next = wait
		}
	}
	p.RequeueAfter = next
	return p
}

// LastHeartbeat is when the node was last known alive: its Lease's renewTime (the node's
// creation when it has no Lease), but never before since.
func LastHeartbeat(node *corev1.Node, lease *coordinationv1.Lease, since time.Time) time.Time {
	last := node.CreationTimestamp.Time
	if lease != nil && lease.Spec.RenewTime != nil {
		last = lease.Spec.RenewTime.Time
	}
	if last.Before(since) {
		return since
	}
	return last
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// unknownConditions turns every kubelet condition Unknown, adding the ones never reported.
func unknownConditions(conds []corev1.NodeCondition, now time.Time) ([]corev1.NodeCondition, bool) {
	out := make([]corev1.NodeCondition, 0, len(conds)+len(nodeConditionTypes))
	changed := false
	ts := metav1.NewTime(now)
	seen := map[corev1.NodeConditionType]bool{}
	for _, c := range conds {
		seen[c.Type] = true
		if slices.Contains(nodeConditionTypes, c.Type) && c.Status != corev1.ConditionUnknown {
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, ReasonNodeStatusUnknown, MessageStatusUnknown
			c.LastTransitionTime = ts
			changed = true
		}
		out = append(out, c)
	}
	for _, t := range nodeConditionTypes {
		if !seen[t] {
			out = append(out, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
				LastHeartbeatTime: ts, LastTransitionTime: ts,
			})
			changed = true
		}
	}
	return out, changed
}

// unreachableTaints are the taints of a lost node: NoSchedule keeps new pods away, NoExecute
// starts the eviction clock of the pods already there.
func unreachableTaints(now time.Time) []corev1.Taint {
	ts := metav1.NewTime(now)
	return []corev1.Taint{
		{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts},
	}
}

func withUnreachableTaints(taints []corev1.Taint, now time.Time) ([]corev1.Taint, bool) {
	out := slices.Clone(taints)
	changed := false
	for _, want := range unreachableTaints(now) {
		if !slices.ContainsFunc(out, func(t corev1.Taint) bool { return t.Key == want.Key && t.Effect == want.Effect }) {
			out = append(out, want)
			changed = true
		}
	}
	return out, changed
}

func withoutUnreachableTaints(taints []corev1.Taint) ([]corev1.Taint, bool) {
	out := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == TaintUnreachable })
	if len(out) == len(taints) {
		return taints, false
	}
	if len(out) == 0 {
		out = nil // so the field is omitted rather than written as []
	}
	return out, true
}

// Toleration is how long pod stays on an unreachable node: its own toleration of the
// unreachable NoExecute taint, or def when it has none. forever is set for a matching
// toleration without tolerationSeconds.
func Toleration(pod *corev1.Pod, def time.Duration) (d time.Duration, forever bool) {
	taint := corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute}
	found, best := false, time.Duration(0)
	for i := range pod.Spec.Tolerations {
		tol := &pod.Spec.Tolerations[i]
		// Only Exists/Equal apply to this taint; the logger is for comparison operators' parse errors.
		if !tol.ToleratesTaint(logr.Discard(), &taint, false) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return 0, true
		}
		secs := max(*tol.TolerationSeconds, 0)
		// Of several matching tolerations the longest wins, as in the taint manager.
		if d := time.Duration(secs) * time.Second; !found || d > best {
			found, best = true, d
		}
	}
	if found {
		return best, false
	}
	return def, false
}

// podNotReady returns a copy of pod with Ready=False, unless it already says so or has
// finished.
func podNotReady(pod *corev1.Pod, now time.Time) (*corev1.Pod, bool) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil, false
	}
	out := pod.DeepCopy()
	ts := metav1.NewTime(now)
	for i := range out.Status.Conditions {
		c := &out.Status.Conditions[i]
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status == corev1.ConditionFalse {
			return nil, false
		}
		c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, ReasonPodNodeNotReady, "", ts
		return out, true
	}
	out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonPodNodeNotReady, LastTransitionTime: ts,
	})
	return out, true
}
