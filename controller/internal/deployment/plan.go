package deployment

import (
	"fmt"
	"math"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/replicaset"
)

// Kind is the Deployment's group version kind, for owner references.
var Kind = appsv1.SchemeGroupVersion.WithKind("Deployment")

func ownerRef(d *appsv1.Deployment) metav1.OwnerReference {
	return replicaset.OwnerRef(d.ObjectMeta, Kind)
}

// Input is what one sync of a Deployment decides from.
type Input struct {
	Deployment *appsv1.Deployment
	// ReplicaSets are the ReplicaSets it controls, from the cache.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods are the pods those ReplicaSets control, terminating ones included (Recreate waits
	// for the old ones to be gone).
	Pods []*corev1.Pod
	Now  time.Time
}

// Event is an event to record on the Deployment.
type Event struct{ Type, Reason, Message string }

// Plan is what one sync does, in order: create the new ReplicaSet, write the changed ones,
// delete old ones beyond the history limit, write the Deployment's revision annotation, then
// its status. Each step is a step Kubernetes' controller takes in one sync; the next sync,
// woken by the changes these writes cause, takes the next.
type Plan struct {
	Create *appsv1.ReplicaSet
	Update []*appsv1.ReplicaSet
	Delete []*appsv1.ReplicaSet
	// Revision, when not "", is the Deployment's new revision annotation.
	Revision string
	// Status, when not nil, is the Deployment's new status.
	Status *appsv1.DeploymentStatus
	Events []Event
	// RequeueAfter, when positive, is when the progress deadline must be checked.
	RequeueAfter time.Duration
}

// planner works on copies: d is the Deployment whose status it changes along the way, as
// Kubernetes' controller changes its copy; rss are the ReplicaSets as the writes so far leave
// them.
type planner struct {
	in       Input
	d        *appsv1.Deployment
	newRS    *appsv1.ReplicaSet
	old      []*appsv1.ReplicaSet
	changed  map[*appsv1.ReplicaSet]bool
	creating bool
	plan     Plan
}

// Decide is one sync of a Deployment.
func Decide(in Input) Plan {
	p := &planner{in: in, d: in.Deployment.DeepCopy(), changed: map[*appsv1.ReplicaSet]bool{}}
	var rss []*appsv1.ReplicaSet
	for _, rs := range in.ReplicaSets {
		rss = append(rss, rs.DeepCopy())
	}
	p.newRS, p.old = FindNew(p.d, rss)

	switch {
	case p.d.DeletionTimestamp != nil:
		p.syncNewRS(false)
		p.finishStatus(false)
	case p.d.Spec.Paused:
		p.pausedConditions()
		p.syncNewRS(false)
		p.scale()
		p.cleanup()
		p.finishStatus(false)
	case p.scalingEvent():
		p.pausedConditions()
		p.syncNewRS(false)
		p.scale()
		p.finishStatus(false)
	case p.d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		p.pausedConditions()
		p.recreate()
	default:
		p.pausedConditions()
		p.rolling()
	}
	for _, rs := range append(p.old, p.newRS) {
		if rs != nil && p.changed[rs] && !(p.creating && rs == p.newRS) {
			p.plan.Update = append(p.plan.Update, rs)
		}
	}
	return p.plan
}

func (p *planner) all() []*appsv1.ReplicaSet {
	out := slices.Clone(p.old)
	if p.newRS != nil {
		out = append(out, p.newRS)
	}
	return out
}

// syncNewRS finds or (when create) makes the new ReplicaSet and brings its revision and
// annotations, and the Deployment's revision, up to date.
func (p *planner) syncNewRS(create bool) {
	revision := MaxRevision(p.old) + 1
	if p.newRS != nil {
		if setNewRSAnnotations(p.d, p.newRS, revision, true) || p.newRS.Spec.MinReadySeconds != p.d.Spec.MinReadySeconds {
			p.newRS.Spec.MinReadySeconds = p.d.Spec.MinReadySeconds
			p.changed[p.newRS] = true
		}
		p.setRevision(p.newRS.Annotations[RevisionAnnotation])
		if hasDeadline(p.d) && condition(p.d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&p.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS,
				fmt.Sprintf("Found new replica set %q", p.newRS.Name), p.in.Now))
		}
		return
	}
	if !create {
		return
	}
	rs := NewReplicaSet(p.d, revision)
	*rs.Spec.Replicas = p.newRSReplicas(rs)
	rs.CreationTimestamp = metav1.NewTime(p.in.Now)
	p.newRS, p.creating = rs, true
	p.plan.Create = rs
	if n := *rs.Spec.Replicas; n > 0 {
		p.event(corev1.EventTypeNormal, ReasonScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s from 0 to %d", rs.Name, n))
	}
	p.setRevision(rs.Annotations[RevisionAnnotation])
	if hasDeadline(p.d) {
		setCondition(&p.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated,
			fmt.Sprintf("Created new replica set %q", rs.Name), p.in.Now))
	}
}

func (p *planner) setRevision(rev string) {
	if rev != "" && p.d.Annotations[RevisionAnnotation] != rev {
		if p.d.Annotations == nil {
			p.d.Annotations = map[string]string{}
		}
		p.d.Annotations[RevisionAnnotation] = rev
		p.plan.Revision = rev
	}
}

func (p *planner) event(typ, reason, msg string) {
	p.plan.Events = append(p.plan.Events, Event{typ, reason, msg})
}

// scaleTo sets rs's size (and the replica annotations) for d; it reports a size change.
func (p *planner) scaleTo(rs *appsv1.ReplicaSet, n int32) bool {
	from := rsReplicas(rs)
	annotated := setReplicasAnnotations(rs, replicas(p.d), replicas(p.d)+MaxSurge(p.d))
	if from == n && !annotated {
		return false
	}
	*rs.Spec.Replicas = n
	p.changed[rs] = true
	switch {
	case n > from:
		p.event(corev1.EventTypeNormal, ReasonScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s from %d to %d", rs.Name, from, n))
	case n < from:
		p.event(corev1.EventTypeNormal, ReasonScalingReplicaSet, fmt.Sprintf("Scaled down replica set %s from %d to %d", rs.Name, from, n))
	}
	return from != n
}

// newRSReplicas is how big the new ReplicaSet may be now: with RollingUpdate, as close to
// replicas as the surge allows on top of every ReplicaSet's size; with Recreate, replicas.
func (p *planner) newRSReplicas(newRS *appsv1.ReplicaSet) int32 {
	if rolling(p.d) == nil {
		return replicas(p.d)
	}
	total := replicas(p.d) + MaxSurge(p.d)
	current := sumReplicas(p.old) + rsReplicas(newRS)
	if current >= total {
		return rsReplicas(newRS)
	}
	return rsReplicas(newRS) + min(total-current, replicas(p.d)-rsReplicas(newRS))
}

// rolling is one step of a RollingUpdate: grow the new ReplicaSet within the surge, or else
// shrink old ones within maxUnavailable; once complete, clean up history.
func (p *planner) rolling() {
	p.syncNewRS(true)
	if !p.creating && p.scaleNewRS() {
		p.finishStatus(true)
		return
	}
	if p.scaleDownOld() {
		p.finishStatus(true)
		return
	}
	if complete(p.d, p.status()) {
		p.cleanup()
	}
	p.finishStatus(true)
}

func (p *planner) scaleNewRS() bool {
	want := replicas(p.d)
	switch cur := rsReplicas(p.newRS); {
	case cur == want:
		return false
	case cur > want:
		return p.scaleTo(p.newRS, want)
	}
	return p.scaleTo(p.newRS, p.newRSReplicas(p.newRS))
}

// scaleDownOld shrinks old ReplicaSets as far as maxUnavailable allows: their unavailable
// pods first (they serve nobody), then available ones, oldest ReplicaSet first.
func (p *planner) scaleDownOld() bool {
	if sumReplicas(p.old) == 0 {
		return false
	}
	minAvailable := replicas(p.d) - MaxUnavailable(p.d)
	newUnavailable := rsReplicas(p.newRS)
	if p.newRS != nil {
		newUnavailable -= p.newRS.Status.AvailableReplicas
	}
	maxScaledDown := sumReplicas(p.all()) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	old := slices.Clone(p.old)
	slices.SortFunc(old, byCreation)
	scaled := false
	var done int32
	for _, rs := range old {
		if done >= maxScaledDown {
			break
		}
		unhealthy := rsReplicas(rs) - rs.Status.AvailableReplicas
		if rsReplicas(rs) == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-done, unhealthy)
		scaled = p.scaleTo(rs, rsReplicas(rs)-n) || scaled
		done += n
	}
	var available int32
	for _, rs := range p.all() {
		available += rs.Status.AvailableReplicas
	}
	if available > minAvailable {
		budget, done := available-minAvailable, int32(0)
		for _, rs := range old {
			if done >= budget {
				break
			}
			if rsReplicas(rs) == 0 {
				continue
			}
			n := min(rsReplicas(rs), budget-done)
			scaled = p.scaleTo(rs, rsReplicas(rs)-n) || scaled
			done += n
		}
	}
	return scaled
}

// recreate is one step of Recreate: scale every old ReplicaSet to zero, wait until none of
// their pods is left, then create and grow the new one.
func (p *planner) recreate() {
	p.syncNewRS(false)
	scaled := false
	for _, rs := range p.old {
		if rsReplicas(rs) > 0 {
			scaled = p.scaleTo(rs, 0) || scaled
		}
	}
	if scaled || OldPodsRunning(p.newRS, p.old, p.in.Pods) {
		p.finishStatus(true)
		return
	}
	if p.newRS == nil {
		p.syncNewRS(true)
	}
	if !p.creating {
		p.scaleTo(p.newRS, replicas(p.d))
	}
	if complete(p.d, p.status()) {
		p.cleanup()
	}
	p.finishStatus(true)
}

// OldPodsRunning reports whether any pod of an old ReplicaSet is still there and not
// finished, terminating ones included: Recreate starts new pods only when none is.
func OldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, pods []*corev1.Pod) bool {
	for _, rs := range old {
		if rs.Status.Replicas > 0 {
			return true
		}
	}
	oldUIDs := map[string]bool{}
	for _, rs := range old {
		oldUIDs[string(rs.UID)] = true
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || !oldUIDs[string(ref.UID)] || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
			return true
		}
	}
	return false
}

// scalingEvent reports whether replicas changed since the active ReplicaSets were sized (their
// desired-replicas annotation): then sizes are adjusted in proportion, without rolling.
func (p *planner) scalingEvent() bool {
	for _, rs := range p.all() {
		if rsReplicas(rs) == 0 {
			continue
		}
		if want, ok := annotatedInt(rs, DesiredReplicasAnnotation); ok && want != replicas(p.d) {
			return true
		}
	}
	return false
}

// scale sizes the ReplicaSets for replicas: the only active one (or the newest) takes it all;
// a saturated new ReplicaSet leaves the old ones at zero; otherwise, during a RollingUpdate,
// the pods to add or remove are shared in proportion to each ReplicaSet's size (Kubernetes'
// proportional scaling), the rounding left to the biggest.
func (p *planner) scale() {
	if one := p.activeOrLatest(); one != nil {
		p.scaleTo(one, replicas(p.d))
		return
	}
	if saturated(p.d, p.newRS) {
		for _, rs := range p.old {
			p.scaleTo(rs, 0)
		}
		return
	}
	if rolling(p.d) == nil {
		return
	}
	var active []*appsv1.ReplicaSet
	for _, rs := range p.all() {
		if rsReplicas(rs) > 0 {
			active = append(active, rs)
		}
	}
	allowed := int32(0)
	if replicas(p.d) > 0 {
		allowed = replicas(p.d) + MaxSurge(p.d)
	}
	toAdd := allowed - sumReplicas(active)
	slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
		if rsReplicas(a) != rsReplicas(b) {
			return int(rsReplicas(b) - rsReplicas(a)) // biggest first
		}
		if toAdd > 0 {
			return byCreation(b, a) // newer first when growing
		}
		return byCreation(a, b) // older first when shrinking
	})
	sizes := make([]int32, len(active))
	var added int32
	for i, rs := range active {
		sizes[i] = rsReplicas(rs)
		if toAdd != 0 {
			share := p.proportion(rs, toAdd, added)
			sizes[i] += share
			added += share
		}
	}
	if len(active) > 0 && added != toAdd {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}
	for i, rs := range active {
		p.scaleTo(rs, sizes[i])
	}
}

func (p *planner) proportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas(p.d) == 0 {
		fraction = -rsReplicas(rs)
	} else {
		annotated, ok := annotatedInt(rs, MaxReplicasAnnotation)
		if !ok || annotated == 0 {
			annotated = p.in.Deployment.Status.Replicas
		}
		if annotated == 0 {
			annotated = rsReplicas(rs)
		}
		size := float64(rsReplicas(rs)*(replicas(p.d)+MaxSurge(p.d))) / float64(annotated)
		fraction = int32(math.Round(size)) - rsReplicas(rs)
	}
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}

func (p *planner) activeOrLatest() *appsv1.ReplicaSet {
	var active []*appsv1.ReplicaSet
	for _, rs := range p.all() {
		if rsReplicas(rs) > 0 {
			active = append(active, rs)
		}
	}
	switch len(active) {
	case 1:
		return active[0]
	case 0:
		if p.newRS != nil {
			return p.newRS
		}
		if len(p.old) > 0 {
			return slices.MaxFunc(p.old, byCreation)
		}
	}
	return nil
}

func saturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, ok := annotatedInt(rs, DesiredReplicasAnnotation)
	return ok && rsReplicas(rs) == replicas(d) && want == replicas(d) && rs.Status.AvailableReplicas == replicas(d)
}

// cleanup deletes the oldest ReplicaSets beyond revisionHistoryLimit that run nothing.
func (p *planner) cleanup() {
	if p.d.Spec.RevisionHistoryLimit == nil {
		return
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range p.old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	extra := len(alive) - int(*p.d.Spec.RevisionHistoryLimit)
	if extra <= 0 {
		return
	}
	slices.SortFunc(alive, func(a, b *appsv1.ReplicaSet) int {
		if ra, rb := Revision(a), Revision(b); ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return byCreation(a, b)
	})
	for _, rs := range alive[:extra] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration || p.changed[rs] {
			continue
		}
		p.plan.Delete = append(p.plan.Delete, rs)
	}
}

func sumReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rsReplicas(rs)
	}
	return n
}

// finishStatus computes the status (with the rollout's Progressing condition when rollout)
// and puts it in the plan when it differs from the stored one.
func (p *planner) finishStatus(rollout bool) {
	st := p.status()
	if rollout {
		p.progress(&st)
	}
	if !apiequality.Semantic.DeepEqual(normalized(p.in.Deployment.Status), normalized(st)) {
		p.plan.Status = &st
	}
}

func normalized(st appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	return st
}
