package framework

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Resources are amounts of what pods request: CPU in millicores, memory and ephemeral storage
// in bytes, and any other scalar resource (extended resources, hugepages) by name.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Scalar           map[corev1.ResourceName]int64
}

// Add adds r2 to r.
func (r *Resources) Add(r2 Resources) {
	r.MilliCPU += r2.MilliCPU
	r.Memory += r2.Memory
	r.EphemeralStorage += r2.EphemeralStorage
	for name, v := range r2.Scalar {
		r.setScalar(name, r.Scalar[name]+v)
	}
}

// Sub removes r2 from r.
func (r *Resources) Sub(r2 Resources) {
	r.MilliCPU -= r2.MilliCPU
	r.Memory -= r2.Memory
	r.EphemeralStorage -= r2.EphemeralStorage
	for name, v := range r2.Scalar {
		r.setScalar(name, r.Scalar[name]-v)
	}
}

func (r *Resources) setScalar(name corev1.ResourceName, v int64) {
	if r.Scalar == nil {
		r.Scalar = map[corev1.ResourceName]int64{}
	}
	if v == 0 {
		delete(r.Scalar, name)
		return
	}
	r.Scalar[name] = v
}

// Clone returns a copy that shares nothing with r.
func (r Resources) Clone() Resources {
	out := r
	out.Scalar = nil
	for name, v := range r.Scalar {
		out.setScalar(name, v)
	}
	return out
}

// HostPort is one port a pod takes on its node's address.
type HostPort struct {
	IP       string // "" and "0.0.0.0" mean every address
	Protocol corev1.Protocol
	Port     int32
}

// NodeInfo is what the scheduler knows about one node: the Node and the sum of what the pods
// bound (or assumed bound) to it take.
type NodeInfo struct {
	Node *corev1.Node
	// Requested is the sum of the effective requests of the node's pods.
	Requested Resources
	// Pods counts the node's pods; PodsByOwner counts them per controller UID, for spreading.
	Pods        int
	PodsByOwner map[types.UID]int
	Ports       []HostPort
	// Usage is what the node's kubelet reported its pods use, nil when unknown or too old to
	// trust (the cache decides, with its clock).
	Usage *Usage

	// factsFor is the Node the cached answers below were worked out from: every filter and
	// strategy asks them for hundreds of nodes per pod, and parsing quantities or walking
	// conditions that often costs more than the scheduling itself. A Node is never changed in
	// place (an update brings a new object), so the pointer says when they are stale.
	factsFor      *corev1.Node
	alloc         Resources
	allocPods     int64
	ready         bool
	unschedulable bool
	taints        []corev1.Taint // the NoSchedule and NoExecute ones, which filters look at
}

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// NewNodeInfo returns an empty NodeInfo for node.
func NewNodeInfo(node *corev1.Node) *NodeInfo {
	return &NodeInfo{Node: node, PodsByOwner: map[types.UID]int{}}
}

// AddPod accounts for pod on this node.
func (n *NodeInfo) AddPod(pod *corev1.Pod) { n.update(pod, 1) }

// RemovePod undoes AddPod for the same pod.
func (n *NodeInfo) RemovePod(pod *corev1.Pod) { n.update(pod, -1) }

func (n *NodeInfo) update(pod *corev1.Pod, sign int) {
	req := PodRequests(pod)
	if sign > 0 {
		n.Requested.Add(req)
	} else {
		n.Requested.Sub(req)
	}
	n.Pods += sign
	if uid := ControllerUID(pod); uid != "" {
		if n.PodsByOwner == nil {
			n.PodsByOwner = map[types.UID]int{}
		}
		n.PodsByOwner[uid] += sign
		if n.PodsByOwner[uid] <= 0 {
			delete(n.PodsByOwner, uid)
		}
	}
	for _, p := range PodHostPorts(pod) {
		if sign > 0 {
			n.Ports = append(n.Ports, p)
			continue
		}
		for i, q := range n.Ports {
			if q == p {
				n.Ports = append(n.Ports[:i:i], n.Ports[i+1:]...)
				break
			}
		}
	}
}

// Clone returns a copy the caller may change without touching n (the Node itself is shared
// and read-only).
func (n *NodeInfo) Clone() *NodeInfo {
	out := &NodeInfo{}
	n.CopyTo(out)
	return out
}

// CopyTo makes dst a copy of n that shares nothing the caller may change, reusing dst's maps
// and slices: the scheduler's snapshot keeps its nodes in one array, in name order, and
// copies a changed node over its old copy, so a search over hundreds of nodes walks memory in
// order and a copy allocates nothing.
func (n *NodeInfo) CopyTo(dst *NodeInfo) {
	owners, ports, scalar := dst.PodsByOwner, dst.Ports[:0], dst.Requested.Scalar
	*dst = *n
	if owners == nil {
		owners = make(map[types.UID]int, len(n.PodsByOwner))
	} else {
		clear(owners)
	}
	maps.Copy(owners, n.PodsByOwner)
	dst.PodsByOwner = owners
	dst.Ports = append(ports, n.Ports...)
	dst.Requested.Scalar = nil
	if len(n.Requested.Scalar) > 0 {
		if scalar == nil {
			scalar = make(map[corev1.ResourceName]int64, len(n.Requested.Scalar))
		} else {
			clear(scalar)
		}
		maps.Copy(scalar, n.Requested.Scalar)
		dst.Requested.Scalar = scalar
	}
	if n.Usage != nil {
		u := *n.Usage
		dst.Usage = &u
	}
}

// Allocatable is what the node offers pods, from status.allocatable (or capacity when a
// kubelet reports no allocatable).
// The result is the caller's to read, not to change (its scalar map is shared).
func (n *NodeInfo) Allocatable() (Resources, int64) {
	n.facts()
	return n.alloc, n.allocPods
}

// Ready reports whether the node's Ready condition is True.
func (n *NodeInfo) Ready() bool {
	n.facts()
	return n.ready
}

// Unschedulable reports whether the node is cordoned (spec.unschedulable).
func (n *NodeInfo) Unschedulable() bool {
	n.facts()
	return n.unschedulable
}

// SchedulingTaints are the node's NoSchedule and NoExecute taints, the ones a pod must
// tolerate to land there. The slice is shared: read it, do not change it.
func (n *NodeInfo) SchedulingTaints() []corev1.Taint {
	n.facts()
	return n.taints
}

func (n *NodeInfo) facts() {
	if n.factsFor == n.Node {
		return
	}
	n.alloc, n.allocPods = allocatable(n.Node)
	n.unschedulable = n.Node.Spec.Unschedulable
	n.taints = nil
	for _, t := range n.Node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			n.taints = append(n.taints, t)
		}
	}
	n.ready = false
	for _, c := range n.Node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.ready = c.Status == corev1.ConditionTrue
			break
		}
	}
	n.factsFor = n.Node
}

func allocatable(node *corev1.Node) (Resources, int64) {
	list := node.Status.Allocatable
	if len(list) == 0 {
		list = node.Status.Capacity
	}
	var r Resources
	var pods int64
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case corev1.ResourcePods:
			pods = q.Value()
		default:
			r.setScalar(name, q.Value())
		}
	}
	return r, pods
}

// PodRequests is what a pod takes from its node while it runs: the larger of the sum of its
// containers' requests and the largest init container request (init containers run one at a
// time, before the others), plus the pod overhead.
func PodRequests(pod *corev1.Pod) Resources {
	var sum Resources
	for i := range pod.Spec.Containers {
		sum.Add(fromList(pod.Spec.Containers[i].Resources.Requests))
	}
	for i := range pod.Spec.InitContainers {
		init := fromList(pod.Spec.InitContainers[i].Resources.Requests)
		sum.MilliCPU = max(sum.MilliCPU, init.MilliCPU)
		sum.Memory = max(sum.Memory, init.Memory)
		sum.EphemeralStorage = max(sum.EphemeralStorage, init.EphemeralStorage)
		for name, v := range init.Scalar {
			if v > sum.Scalar[name] {
				sum.setScalar(name, v)
			}
		}
	}
	sum.Add(fromList(pod.Spec.Overhead))
	return sum
}

func fromList(list corev1.ResourceList) Resources {
	var r Resources
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		default:
			r.setScalar(name, q.Value())
		}
	}
	return r
}

// PodHostPorts lists the host ports a pod's containers ask for.
func PodHostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, HostPort{IP: p.HostIP, Protocol: proto, Port: p.HostPort})
			}
		}
	}
	return out
}

// SameAccounting reports whether a and b count the same on a node: the same requests, host
// ports and controller, so replacing one with the other leaves a NodeInfo's sums unchanged.
func SameAccounting(a, b *corev1.Pod) bool {
	if a == b {
		return true
	}
	ra, rb := PodRequests(a), PodRequests(b)
	return ra.MilliCPU == rb.MilliCPU && ra.Memory == rb.Memory && ra.EphemeralStorage == rb.EphemeralStorage &&
		maps.Equal(ra.Scalar, rb.Scalar) && ControllerUID(a) == ControllerUID(b) &&
		slices.Equal(PodHostPorts(a), PodHostPorts(b))
}

// ControllerUID is the UID of the pod's controller (the ownerReference with controller=true),
// or "" for a pod nobody manages.
func ControllerUID(pod *corev1.Pod) types.UID {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}
