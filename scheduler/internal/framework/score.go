package framework

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Strategy picks one node among the feasible ones. Select gets at least one node, in name
// order, and must not change them; ties are broken by name so results are reproducible.
type Strategy interface {
	Name() string
	Select(pod *corev1.Pod, nodes []*NodeInfo) *NodeInfo
}

// Sampler is a Strategy that says itself where the search for feasible nodes starts (an index
// into the nodes, in name order) and how many it needs; without it the scheduler rotates the
// start and stops at NumFeasibleNodesToFind.
type Sampler interface {
	Sample(nodes []*NodeInfo) (start, want int)
}

// Strategy names, as the --strategy flag takes them.
const (
	StrategyBalanced    = "balanced"
	StrategyRoundRobin  = "roundrobin"
	StrategyRandom      = "random"
	StrategyLeastPods   = "leastpods"
	StrategyLeastCPU    = "leastcpu"
	StrategyLeastMemory = "leastmemory"
)

// StrategyNames lists the valid --strategy values.
var StrategyNames = []string{StrategyBalanced, StrategyRoundRobin, StrategyRandom, StrategyLeastPods, StrategyLeastCPU, StrategyLeastMemory}

// NewStrategy returns the named strategy; rng is used only by random.
func NewStrategy(name string, rng *rand.Rand) (Strategy, error) {
	switch name {
	case StrategyBalanced, "":
		return Balanced{}, nil
	case StrategyRoundRobin:
		return &RoundRobin{}, nil
	case StrategyRandom:
		return NewRandom(rng), nil
	case StrategyLeastPods:
		return LeastPods{}, nil
	case StrategyLeastCPU:
		return LeastCPU{}, nil
	case StrategyLeastMemory:
		return LeastMemory{}, nil
	}
	return nil, fmt.Errorf("unknown strategy %q (want one of %v)", name, StrategyNames)
}

// RoundRobin hands nodes out in name order: each pod goes to the first feasible node after the
// one the previous pod got, wrapping around. Remembering the name, not an index, keeps the
// rotation fair when the feasible set changes between pods.
type RoundRobin struct {
	mu   sync.Mutex
	last string
}

func (*RoundRobin) Name() string { return StrategyRoundRobin }

// Sample starts the search at the first node after the last one handed out and needs one
// feasible node: the first met is the one Select would pick among them all.
func (r *RoundRobin) Sample(nodes []*NodeInfo) (start, want int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i].Name() > r.last })
	if i == len(nodes) {
		i = 0
	}
	return i, 1
}

func (r *RoundRobin) Select(_ *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	chosen := nodes[0]
	for _, n := range nodes {
		if n.Name() > r.last {
			chosen = n
			break
		}
	}
	r.last = chosen.Name()
	return chosen
}

// Random picks uniformly; the generator is injected so tests are deterministic.
type Random struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewRandom returns a Random strategy drawing from rng (a time-seeded one when nil).
func NewRandom(rng *rand.Rand) *Random {
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Random{rng: rng}
}

func (*Random) Name() string { return StrategyRandom }

func (r *Random) Select(_ *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return nodes[r.rng.IntN(len(nodes))]
}

// LeastPods picks the node running the fewest pods.
type LeastPods struct{}

func (LeastPods) Name() string { return StrategyLeastPods }

func (LeastPods) Select(_ *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	return pickMin(nodes, func(n *NodeInfo) key { return key{float64(n.Pods)} })
}

// LeastCPU picks the node whose CPU, with the pod added, is the smallest share of its
// allocatable CPU. A node's CPU is the larger of what its pods request and what its kubelet
// reports they use (NodeInfo.Usage, when fresh), so a node busy with pods that request little
// loses to an idle one; without a usage report, requests alone count.
type LeastCPU struct{}

func (LeastCPU) Name() string { return StrategyLeastCPU }

func (LeastCPU) Select(pod *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	req := PodRequests(pod)
	return pickMin(nodes, func(n *NodeInfo) key {
		cpu, _ := loadShares(n, req)
		return key{cpu, float64(n.Pods)}
	})
}

// LeastMemory is LeastCPU for memory: the larger of requested and used working set, with the
// pod's request added, as a share of allocatable memory.
type LeastMemory struct{}

func (LeastMemory) Name() string { return StrategyLeastMemory }

func (LeastMemory) Select(pod *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	req := PodRequests(pod)
	return pickMin(nodes, func(n *NodeInfo) key {
		_, mem := loadShares(n, req)
		return key{mem, float64(n.Pods)}
	})
}

// Balanced, the default, first spreads the pods of one controller (a ReplicaSet's replicas)
// over as many nodes as it can, so losing a node loses few of them, and then prefers the least
// requested node (mean of the CPU and memory shares), then the one with fewer pods.
type Balanced struct{}

func (Balanced) Name() string { return StrategyBalanced }

func (Balanced) Select(pod *corev1.Pod, nodes []*NodeInfo) *NodeInfo {
	req := PodRequests(pod)
	uid := ControllerUID(pod)
	return pickMin(nodes, func(n *NodeInfo) key {
		siblings := 0
		if uid != "" {
			siblings = n.PodsByOwner[uid]
		}
		cpu, mem := shares(n, req)
		return key{float64(siblings), (cpu + mem) / 2, float64(n.Pods)}
	})
}

// shares are the CPU and memory shares of n's allocatable that would be requested with req
// added. A node that offers none of a resource counts as full of it.
func shares(n *NodeInfo, req Resources) (cpu, mem float64) {
	return shareOf(n, n.Requested.MilliCPU+req.MilliCPU, n.Requested.Memory+req.Memory)
}

// loadShares are like shares, but each resource counts what is in use when the kubelet's
// report is higher than the requests: max(requested, used) + req.
func loadShares(n *NodeInfo, req Resources) (cpu, mem float64) {
	cpuLoad, memLoad := n.Requested.MilliCPU, n.Requested.Memory
	if u := n.Usage; u != nil {
		cpuLoad, memLoad = max(cpuLoad, u.MilliCPU), max(memLoad, u.Memory)
	}
	return shareOf(n, cpuLoad+req.MilliCPU, memLoad+req.Memory)
}

func shareOf(n *NodeInfo, milliCPU, memory int64) (cpu, mem float64) {
	alloc, _ := n.Allocatable()
	cpu, mem = 1, 1
	if alloc.MilliCPU > 0 {
		cpu = float64(milliCPU) / float64(alloc.MilliCPU)
	}
	if alloc.Memory > 0 {
		mem = float64(memory) / float64(alloc.Memory)
	}
	return cpu, mem
}

// key orders nodes for pickMin: compared element by element, unused elements zero. A fixed
// array, so ranking thousands of nodes allocates nothing.
type key [3]float64

// pickMin returns the node with the lexicographically smallest key; nodes come in name order,
// so the first of equals is also the first by name.
func pickMin(nodes []*NodeInfo, keyOf func(*NodeInfo) key) *NodeInfo {
	best, bestKey := nodes[0], keyOf(nodes[0])
	for _, n := range nodes[1:] {
		if k := keyOf(n); k.less(bestKey) {
			best, bestKey = n, k
		}
	}
	return best
}

func (a key) less(b key) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
