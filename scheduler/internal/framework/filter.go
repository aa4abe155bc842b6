package framework

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Reasons a node fails a filter, worded as the Kubernetes scheduler words them, so users and
// tools that know those messages recognise ours.
const (
	ReasonNotReady      = "node(s) were not ready"
	ReasonUnschedulable = "node(s) were unschedulable"
	ReasonNodeAffinity  = "node(s) didn't match Pod's node affinity/selector"
	ReasonHostPorts     = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods   = "Too many pods"
	// NoNodesAvailable is the whole message when the cluster has no node at all.
	NoNodesAvailable = "no nodes available to schedule pods"
)

// TaintReason is the reason for a taint the pod does not tolerate.
func TaintReason(t corev1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

// InsufficientReason is the reason for a resource the node has too little of.
func InsufficientReason(name corev1.ResourceName) string { return "Insufficient " + string(name) }

// Filter decides whether one node can take a pod; it returns nil when it can and otherwise
// the reasons it cannot (usually one; resource fit may name several resources).
type Filter struct {
	Name string
	Fn   func(p *PodInfo, n *NodeInfo) []string
}

// PodInfo is the pod being scheduled with what the filters derive from it, worked out once
// per scheduling attempt instead of once per node looked at (Kubernetes' PreFilter step).
type PodInfo struct {
	Pod       *corev1.Pod
	Requests  Resources
	HostPorts []HostPort
	// scalars are the names in Requests.Scalar, sorted, so reasons come out in a stable order.
	scalars []corev1.ResourceName
}

// NewPodInfo derives a PodInfo from pod.
func NewPodInfo(pod *corev1.Pod) *PodInfo {
	p := &PodInfo{Pod: pod, Requests: PodRequests(pod), HostPorts: PodHostPorts(pod)}
	for name := range p.Requests.Scalar {
		p.scalars = append(p.scalars, name)
	}
	slices.Sort(p.scalars)
	return p
}

// DefaultFilters are the filters in the order they run: cheap checks on the node first, the
// accounting of what is already bound last.
func DefaultFilters() []Filter {
	return []Filter{
		{"NodeReady", NodeReady},
		{"NodeUnschedulable", NodeUnschedulable},
		{"NodeAffinity", NodeAffinity},
		{"TaintToleration", TaintToleration},
		{"NodePorts", NodePorts},
		{"NodeResourcesFit", NodeResourcesFit},
	}
}

// RunFilters returns the reasons node n fails the first failing filter, or nil when it passes
// them all. Like Kubernetes, a node is counted once, under the first filter that rejects it.
func RunFilters(filters []Filter, pod *corev1.Pod, n *NodeInfo) []string {
	return runFilters(filters, NewPodInfo(pod), n)
}

func runFilters(filters []Filter, p *PodInfo, n *NodeInfo) []string {
	for _, f := range filters {
		if reasons := f.Fn(p, n); len(reasons) > 0 {
			return reasons
		}
	}
	return nil
}

// NodeReady rejects a node whose Ready condition is not True.
func NodeReady(_ *PodInfo, n *NodeInfo) []string {
	if n.Ready() {
		return nil
	}
	return []string{ReasonNotReady}
}

// NodeUnschedulable rejects a cordoned node unless the pod tolerates the unschedulable taint
// (as DaemonSet pods do).
func NodeUnschedulable(p *PodInfo, n *NodeInfo) []string {
	if !n.Unschedulable() {
		return nil
	}
	taint := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if tolerates(p.Pod.Spec.Tolerations, taint) {
		return nil
	}
	return []string{ReasonUnschedulable}
}

// NodeAffinity checks spec.nodeSelector and the required node affinity; both must hold.
func NodeAffinity(p *PodInfo, n *NodeInfo) []string {
	pod := p.Pod
	if len(pod.Spec.NodeSelector) == 0 && pod.Spec.Affinity == nil {
		return nil // the common case, decided without touching the node
	}
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := n.Node.Labels[k]; !ok || got != v {
			return []string{ReasonNodeAffinity}
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	if !MatchNodeSelectorTerms(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, n.Node) {
		return []string{ReasonNodeAffinity}
	}
	return nil
}

// MatchNodeSelectorTerms reports whether node matches any of the terms (terms are ORed, the
// requirements inside one term ANDed). A term with no requirement matches nothing, and an
// empty list of terms matches nothing either, as in Kubernetes.
func MatchNodeSelectorTerms(terms []corev1.NodeSelectorTerm, node *corev1.Node) bool {
	for _, t := range terms {
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, r := range t.MatchExpressions {
			v, has := node.Labels[r.Key]
			if !matchRequirement(r, v, has) {
				ok = false
				break
			}
		}
		for _, r := range t.MatchFields {
			if !ok {
				break
			}
			// metadata.name is the only field Kubernetes supports here.
			if r.Key != "metadata.name" || !matchRequirement(r, node.Name, true) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func matchRequirement(r corev1.NodeSelectorRequirement, v string, has bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}

// TaintToleration rejects a node with a NoSchedule or NoExecute taint the pod does not
// tolerate. PreferNoSchedule is a preference, not a filter.
func TaintToleration(p *PodInfo, n *NodeInfo) []string {
	for _, t := range n.SchedulingTaints() {
		if !tolerates(p.Pod.Spec.Tolerations, t) {
			return []string{TaintReason(t)}
		}
	}
	return nil
}

func tolerates(tols []corev1.Toleration, t corev1.Taint) bool {
	for i := range tols {
		if toleratesTaint(&tols[i], &t) {
			return true
		}
	}
	return false
}

// toleratesTaint follows the Kubernetes rules: an empty effect matches every effect, an empty
// key with Exists matches every taint, Exists ignores the value and Equal (the default)
// compares it.
func toleratesTaint(tol *corev1.Toleration, t *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != t.Key && !(tol.Key == "" && tol.Operator == corev1.TolerationOpExists) {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == t.Value
	}
	return false
}

// NodePorts rejects a node where a host port the pod wants is taken. An address of 0.0.0.0 (or
// none) takes the port on every address, so it clashes with any use of the same port.
func NodePorts(p *PodInfo, n *NodeInfo) []string {
	for _, want := range p.HostPorts {
		for _, used := range n.Ports {
			if want.Port == used.Port && want.Protocol == used.Protocol &&
				(wildcard(want.IP) || wildcard(used.IP) || want.IP == used.IP) {
				return []string{ReasonHostPorts}
			}
		}
	}
	return nil
}

func wildcard(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// NodeResourcesFit rejects a node without room for the pod: one more pod than allocatable
// pods, or a requested resource beyond allocatable minus what its pods already request. Every
// resource that does not fit is named.
func NodeResourcesFit(p *PodInfo, n *NodeInfo) []string {
	var reasons []string
	alloc, maxPods := n.Allocatable()
	if int64(n.Pods)+1 > maxPods {
		reasons = append(reasons, ReasonTooManyPods)
	}
	req := p.Requests
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-n.Requested.MilliCPU {
		reasons = append(reasons, InsufficientReason(corev1.ResourceCPU))
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-n.Requested.Memory {
		reasons = append(reasons, InsufficientReason(corev1.ResourceMemory))
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-n.Requested.EphemeralStorage {
		reasons = append(reasons, InsufficientReason(corev1.ResourceEphemeralStorage))
	}
	for _, name := range p.scalars {
		if v := req.Scalar[name]; v > 0 && v > alloc.Scalar[name]-n.Requested.Scalar[name] {
			reasons = append(reasons, InsufficientReason(name))
		}
	}
	return reasons
}

// FitError says why a pod fits no node: for each node that failed, the reasons of the filter
// that rejected it.
type FitError struct {
	NumNodes int
	// Failed maps node name to reasons.
	Failed map[string][]string
	// PreFilter, when set, is why the pod was not tried on any node (CheckClaims).
	PreFilter string
}

// Error words it as Kubernetes does: "0/3 nodes are available: 2 Insufficient memory, 1
// node(s) didn't match Pod's node affinity/selector." with reasons counted over nodes, most
// frequent first and alphabetical among equals.
func (e *FitError) Error() string {
	if e.NumNodes == 0 {
		return NoNodesAvailable
	}
	if e.PreFilter != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, e.PreFilter)
	}
	counts := map[string]int{}
	for _, reasons := range e.Failed {
		for _, r := range reasons {
			counts[r]++
		}
	}
	type entry struct {
		reason string
		count  int
	}
	entries := make([]entry, 0, len(counts))
	for r, c := range counts {
		entries = append(entries, entry{r, c})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].count != entries[j].count {
			return entries[i].count > entries[j].count
		}
		return entries[i].reason < entries[j].reason
	})
	parts := make([]string, len(entries))
	for i, en := range entries {
		parts[i] = fmt.Sprintf("%d %s", en.count, en.reason)
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, strings.Join(parts, ", "))
}

// FindFeasible runs the filters over nodes from index start on, wrapping around, and stops
// once want nodes passed (want <= 0: look at every node). It returns the nodes that passed,
// in the order met, appended to buf[:0] (pass nil, or the previous result to reuse its
// array), and how many nodes it looked at; or a *FitError when none passes, which it only
// knows having looked at them all.
func FindFeasible(buf []*NodeInfo, filters []Filter, pod *corev1.Pod, nodes []*NodeInfo, start, want int) ([]*NodeInfo, int, error) {
	ok := buf[:0]
	var failed map[string][]string
	n := len(nodes)
	if want <= 0 || want > n {
		want = n
	}
	if start < 0 || start >= n {
		start = 0
	}
	p := NewPodInfo(pod)
	examined := 0
	for ; examined < n && len(ok) < want; examined++ {
		node := nodes[(start+examined)%n]
		if reasons := runFilters(filters, p, node); len(reasons) > 0 {
			if failed == nil {
				failed = map[string][]string{}
			}
			failed[node.Name()] = reasons
			continue
		}
		ok = append(ok, node)
	}
	if len(ok) == 0 {
		return nil, examined, &FitError{NumNodes: n, Failed: failed}
	}
	return ok, examined, nil
}

// Defaults of NumFeasibleNodesToFind, Kubernetes' own: below MinFeasibleNodesToFind nodes
// every node is looked at; above, an adaptive share that shrinks from half of the nodes to
// MinPercentageOfNodesToScore as the cluster grows, never fewer than MinFeasibleNodesToFind.
const (
	MinFeasibleNodesToFind      = 100
	MinPercentageOfNodesToScore = 5
)

// NumFeasibleNodesToFind is how many feasible nodes a pod's search may stop at among total
// nodes. percentage is the --percentage-of-nodes-to-score setting: 0 means adaptive
// (50% minus 1% per 125 nodes, at least 5%), 100 or more means every node. Stopping early is
// what keeps the cost of one decision flat as the cluster grows; the nodes a pod does not
// look at are looked at first by the next pod (the search start rotates).
func NumFeasibleNodesToFind(total, percentage int) int {
	if total < MinFeasibleNodesToFind || percentage >= 100 {
		return total
	}
	if percentage <= 0 {
		percentage = max(50-total/125, MinPercentageOfNodesToScore)
	}
	return max(total*percentage/100, MinFeasibleNodesToFind)
}
