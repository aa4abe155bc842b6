package daemonset

import (
	"cmp"
	"slices"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/podstatus"
)

// Kind is the DaemonSet's group, version and kind, as its pods' controller references name it.
var Kind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// ShouldRun says whether ds's pod belongs on node: shouldRun when a new one may be placed
// there, shouldContinue when one already there may stay. A node whose taint the pod does not
// tolerate takes no new pod, but keeps one that tolerates its NoExecute taints.
func ShouldRun(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinue bool) {
	return newFit(ds).check(node)
}

// fit is what decides where ds's pods go, worked out once for all the nodes.
type fit struct {
	nodeName string
	affinity nodeaffinity.RequiredNodeAffinity
	tols     []corev1.Toleration
}

func newFit(ds *appsv1.DaemonSet) *fit {
	t := &ds.Spec.Template.Spec
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: t.NodeSelector, Affinity: t.Affinity}}
	return &fit{nodeName: t.NodeName, affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tols: withDaemonTolerations(t.Tolerations, t.HostNetwork)}
}

func (f *fit) check(node *corev1.Node) (shouldRun, shouldContinue bool) {
	if f.nodeName != "" && f.nodeName != node.Name {
		return false, false
	}
	if ok, err := f.affinity.Match(node); err != nil || !ok {
		return false, false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Logger{}, node.Spec.Taints, f.tols, scheduleOrExecute, false); untolerated {
		_, evicts := corev1helpers.FindMatchingUntoleratedTaint(logr.Logger{}, node.Spec.Taints, f.tols, execute, false)
		return false, !evicts
	}
	return true, true
}

// fits are the checks of every node, by name.
type fits map[string][2]bool

func checkAll(ds *appsv1.DaemonSet, nodes []*corev1.Node) fits {
	f := newFit(ds)
	out := make(fits, len(nodes))
	for _, n := range nodes {
		run, keep := f.check(n)
		out[n.Name] = [2]bool{run, keep}
	}
	return out
}

func scheduleOrExecute(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

func execute(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }

// withDaemonTolerations adds the tolerations every DaemonSet pod gets, as upstream: it keeps
// running on a node that is not ready, unreachable, under pressure or cordoned, and a
// host-network pod on one whose network is not set up yet.
func withDaemonTolerations(tols []corev1.Toleration, hostNetwork bool) []corev1.Toleration {
	out := slices.Clone(tols)
	add := func(key string, effect corev1.TaintEffect) {
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		for i := range out {
			if out[i].Key == key && out[i].Effect == effect {
				out[i] = t
				return
			}
		}
		out = append(out, t)
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if hostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
	return out
}

// NewPod is ds's pod for node, from the revision with the given hash: the template's labels
// with the hash, the daemon tolerations, and a required affinity to that node alone
// (matchFields metadata.name), so that the scheduler binds it there.
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	labels := make(map[string]string, len(t.Labels)+1)
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[history.HashLabel] = hash
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{ownerRef(ds.ObjectMeta, Kind)},
		},
		Spec: t.Spec,
	}
	pod.Spec.Tolerations = withDaemonTolerations(pod.Spec.Tolerations, pod.Spec.HostNetwork)
	pod.Spec.Affinity = nodeNameAffinity(pod.Spec.Affinity, node)
	return pod
}

// nodeNameAffinity replaces the required node affinity with the one term naming node: the
// controller has already checked that the node meets the template's own terms.
func nodeNameAffinity(a *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return a
}

func ownerRef(owner metav1.ObjectMeta, gvk schema.GroupVersionKind) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.Name, UID: owner.UID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}
}

// TargetNode is the node a daemon pod is on or meant for: its spec.nodeName once bound,
// before that the node its affinity names.
func TargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range t.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// ByNode groups pods by TargetNode.
func ByNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		n := TargetNode(p)
		out[n] = append(out[n], p)
	}
	return out
}

// Decision is what a sync does: create a pod on each of Create's nodes, delete Delete's pods.
// Failed are the failed pods among Delete, by node (each node starts its next back-off);
// Retry, when not zero, is when a failed pod held back by its back-off may go.
type Decision struct {
	Create []string
	Delete []*corev1.Pod
	Failed map[string]*corev1.Pod
	Retry  time.Duration
}

// Empty reports whether the decision does nothing.
func (d Decision) Empty() bool { return len(d.Create) == 0 && len(d.Delete) == 0 }

// Held is how long the failed pod of ds on a node must still wait before it is replaced: as
// upstream, a node that keeps failing its daemon pod (the kubelet refusing it, say) gets a
// growing back-off rather than a pod a second. nil holds nothing.
type Held func(node string) time.Duration

// Decide is one step of ds towards its spec, given the cluster's nodes, ds's pods by
// TargetNode, the current revision's hash and the failed pods' back-off: first placement (a
// pod where it should run and has none, none where it must not, one per node), and when
// placement has nothing to do, a step of the rolling update.
func Decide(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, held Held, now time.Time) Decision {
	f := checkAll(ds, nodes)
	d := place(ds, nodes, f, byNode, hash, held)
	if !d.Empty() || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return d
	}
	return rollingUpdate(ds, nodes, f, byNode, hash, now)
}

// place is upstream's manage: the pods to create and delete for placement alone.
func place(ds *appsv1.DaemonSet, nodes []*corev1.Node, f fits, byNode map[string][]*corev1.Pod, hash string, held Held) Decision {
	var d Decision
	known := map[string]bool{}
	surge := allowsSurge(ds)
	for _, node := range sortedNodes(nodes) {
		known[node.Name] = true
		pods := byNode[node.Name]
		run, keep := f[node.Name][0], f[node.Name][1]
		switch {
		case run && len(live(pods)) == 0:
			d.Create = append(d.Create, node.Name)
		case keep:
			var running []*corev1.Pod
			for _, p := range live(pods) {
				if p.Status.Phase == corev1.PodFailed {
					// A failed daemon pod is replaced, once its node's back-off allows.
					if wait := heldFor(held, node.Name); wait > 0 {
						if d.Retry == 0 || wait < d.Retry {
							d.Retry = wait
						}
						continue
					}
					d.Delete = append(d.Delete, p)
					if d.Failed == nil {
						d.Failed = map[string]*corev1.Pod{}
					}
					d.Failed[node.Name] = p
					continue
				}
				running = append(running, p)
			}
			d.Delete = append(d.Delete, extras(running, hash, surge)...)
		default:
			d.Delete = append(d.Delete, live(pods)...)
		}
	}
	// Pods on nodes that are gone, or meant for none.
	for _, name := range sortedKeys(byNode) {
		if !known[name] {
			d.Delete = append(d.Delete, live(byNode[name])...)
		}
	}
	return d
}

func heldFor(held Held, node string) time.Duration {
	if held == nil {
		return 0
	}
	return held(node)
}

// extras are the running pods of one node beyond what it may have: the oldest alone, or
// while surging the oldest of the current revision beside the oldest older one, which goes
// once the new one is ready or if it is not ready itself.
func extras(running []*corev1.Pod, hash string, surge bool) []*corev1.Pod {
	if len(running) <= 1 {
		return nil
	}
	sorted := slices.Clone(running)
	slices.SortStableFunc(sorted, olderFirst)
	if !surge {
		return sorted[1:]
	}
	var out []*corev1.Pod
	var oldestNew, oldestOld *corev1.Pod
	for _, p := range sorted {
		switch {
		case p.Labels[history.HashLabel] == hash && oldestNew == nil:
			oldestNew = p
		case p.Labels[history.HashLabel] != hash && oldestOld == nil:
			oldestOld = p
		default:
			out = append(out, p)
		}
	}
	if oldestNew != nil && oldestOld != nil && (!podstatus.Ready(oldestOld) || podstatus.Ready(oldestNew)) {
		out = append(out, oldestOld)
	}
	return out
}

// olderFirst orders pods by phase (running before pending before unknown), then creation.
func olderFirst(a, b *corev1.Pod) int {
	if c := cmp.Compare(phaseRank(a.Status.Phase), phaseRank(b.Status.Phase)); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodRunning:
		return 0
	case corev1.PodPending:
		return 1
	}
	return 2
}

// rollingUpdate is upstream's rolling update step: without surge, delete old pods (the
// unavailable ones freely, the available ones while fewer than maxUnavailable pods are
// unavailable) so placement makes new ones; with surge, start new pods beside old ones (up to
// maxSurge at a time, freely where the old one is unavailable) and delete an old pod once its
// replacement is available.
func rollingUpdate(ds *appsv1.DaemonSet, nodes []*corev1.Node, f fits, byNode map[string][]*corev1.Pod, hash string, now time.Time) Decision {
	desired := 0
	runs := map[string]bool{}
	for _, n := range nodes {
		if f[n.Name][0] {
			desired++
			runs[n.Name] = true
		}
	}
	maxSurge, maxUnavailable := Budgets(ds, desired)
	minReady := ds.Spec.MinReadySeconds
	available := func(p *corev1.Pod) bool { ok, _ := podstatus.Available(p, minReady, now); return ok }
	var d Decision
	if maxSurge == 0 {
		unavailable := 0
		var allowed, candidates []*corev1.Pod
		for _, name := range sortedKeys(byNode) {
			newPod, oldPod, ok := split(byNode[name], hash)
			switch {
			case !ok, newPod == nil && oldPod == nil, newPod != nil && oldPod != nil:
				unavailable++ // placement is still at work here
			case newPod != nil:
				if !available(newPod) {
					unavailable++
				}
			case !available(oldPod):
				allowed = append(allowed, oldPod)
			case unavailable < maxUnavailable:
				candidates = append(candidates, oldPod)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		d.Delete = append(allowed, candidates[:room]...)
		return d
	}
	surged := 0
	var allowed, candidates []string
	for _, name := range sortedKeys(byNode) {
		newPod, oldPod, ok := split(byNode[name], hash)
		switch {
		case !ok:
			surged++
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !runs[name]:
			case !available(oldPod):
				allowed = append(allowed, name)
			case surged < maxSurge:
				candidates = append(candidates, name)
			}
		case !available(newPod):
			surged++
		default:
			d.Delete = append(d.Delete, oldPod)
		}
	}
	room := min(max(maxSurge-surged, 0), len(candidates))
	d.Create = append(allowed, candidates[:room]...)
	return d
}

// split finds the one pod of the current revision and the one older pod on a node; ok is
// false when the node has two of either.
func split(pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range live(pods) {
		if p.Labels[history.HashLabel] == hash {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// Budgets are the rolling update's maxSurge and maxUnavailable as pod counts among desired:
// percentages round surge down and unavailability up, and unavailability is at least one
// when there would be no surge either.
func Budgets(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return 0, 1
	}
	maxSurge = scaled(ru.MaxSurge, desired, false)
	maxUnavailable = scaled(ru.MaxUnavailable, desired, true)
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

func scaled(v *intstr.IntOrString, total int, roundUp bool) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil {
		return 0
	}
	return n
}

func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil && scaled(ru.MaxSurge, 1, true) > 0
}

// live are the pods not being deleted.
func live(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func sortedNodes(nodes []*corev1.Node) []*corev1.Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Status is ds's status from the nodes and its pods by node: how many nodes should run it,
// run it, run it but should not, and how many of those pods are ready, available and of the
// current revision. next is when a ready pod becomes available, 0 when none waits.
func Status(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, now time.Time) (st appsv1.DaemonSetStatus, next time.Duration) {
	st = appsv1.DaemonSetStatus{
		ObservedGeneration: ds.Generation,
		CollisionCount:     ds.Status.CollisionCount,
		Conditions:         ds.Status.Conditions,
	}
	f := checkAll(ds, nodes)
	for _, node := range nodes {
		run := f[node.Name][0]
		pods := live(byNode[node.Name])
		if !run {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sorted := slices.Clone(pods)
		slices.SortStableFunc(sorted, olderFirst)
		p := sorted[0]
		if podstatus.Ready(p) {
			st.NumberReady++
			ok, wait := podstatus.Available(p, ds.Spec.MinReadySeconds, now)
			if ok {
				st.NumberAvailable++
			} else if wait > 0 && (next == 0 || wait < next) {
				next = wait
			}
		}
		if p.Labels[history.HashLabel] == hash {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st, next
}

// Prune are the old revisions to delete so that at most limit remain, oldest first, sparing
// the ones a pod still runs.
func Prune(old []*appsv1.ControllerRevision, pods []*corev1.Pod, limit *int32) []*appsv1.ControllerRevision {
	keep := 10
	if limit != nil {
		keep = int(*limit)
	}
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[history.HashLabel]; h != "" {
			live[h] = true
		}
	}
	var candidates []*appsv1.ControllerRevision
	for _, r := range old {
		if !live[r.Labels[history.HashLabel]] {
			candidates = append(candidates, r)
		}
	}
	sorted := slices.Clone(candidates)
	history.Sort(sorted)
	if len(sorted) <= keep {
		return nil
	}
	return sorted[:len(sorted)-keep]
}
