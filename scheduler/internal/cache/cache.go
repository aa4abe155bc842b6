package cache

import (
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/shared/workqueue/clock"
)

// DefaultAssumeTTL bounds how long an assumed pod counts without the API confirming it; a bind
// that succeeded shows up on the bus within moments, so a longer silence means it was lost.
const DefaultAssumeTTL = 30 * time.Second

// DefaultUsageMaxAge bounds how old a node's usage report may be and still count. Kubelets
// rewrite it at least every minute, so an older one comes from a kubelet that stopped.
const DefaultUsageMaxAge = 3 * time.Minute

type podEntry struct {
	pod      *corev1.Pod
	node     string
	assumed  bool
	deadline time.Time
}

// change records that a node's info changed at a generation of the cache.
type change struct {
	gen  uint64
	node string
}

// maxChanges bounds the change log; a snapshot further behind than the log reaches is rebuilt.
const maxChanges = 1 << 14

// Cache is safe for concurrent use: informer handlers write it while the scheduling loop reads
// snapshots.
type Cache struct {
	clock       clock.Clock
	ttl         time.Duration
	usageMaxAge time.Duration

	mu    sync.Mutex
	nodes map[string]*framework.NodeInfo
	pods  map[string]podEntry // by namespace/name
	// byNode indexes pods by the node they count on, so a node that (re)appears finds its
	// pods without a walk over every pod.
	byNode map[string]map[string]struct{}
	// assumed are the keys of assumed pods, so expiring them does not walk every pod, and
	// nextExpiry is no later than the earliest of their deadlines, so a snapshot update walks
	// them only when one may have passed: with a thousand bindings waiting to be confirmed,
	// walking them for every pod cost more than deciding.
	assumed    map[string]struct{}
	nextExpiry time.Time
	// withUsage are the nodes that carry a usage report, whose freshness each snapshot
	// update judges anew.
	withUsage map[string]struct{}

	// gen counts changes; changes logs which node each changed (oldest first), and
	// structGen is the generation of the last node added or removed. Snapshots use them to
	// copy only what changed since they were last brought up to date.
	gen       uint64
	structGen uint64
	changes   []change
}

// New returns an empty cache; ttl <= 0 means DefaultAssumeTTL.
func New(clk clock.Clock, ttl time.Duration) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	if ttl <= 0 {
		ttl = DefaultAssumeTTL
	}
	return &Cache{clock: clk, ttl: ttl, usageMaxAge: DefaultUsageMaxAge, nodes: map[string]*framework.NodeInfo{},
		pods: map[string]podEntry{}, byNode: map[string]map[string]struct{}{}, assumed: map[string]struct{}{},
		withUsage: map[string]struct{}{}}
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// touchLocked records that node's info changed.
func (c *Cache) touchLocked(node string) {
	c.gen++
	if len(c.changes) >= maxChanges {
		c.changes = append(c.changes[:0], c.changes[len(c.changes)/2:]...)
	}
	c.changes = append(c.changes, change{gen: c.gen, node: node})
}

// SetNode adds or replaces a node, keeping the pods already accounted to it, and reads the
// usage its kubelet reports.
func (c *Cache) SetNode(node *corev1.Node) {
	var usage *framework.Usage
	if u, ok := framework.NodeUsage(node); ok {
		usage = &u
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if usage != nil {
		c.withUsage[node.Name] = struct{}{}
	} else {
		delete(c.withUsage, node.Name)
	}
	if ni, ok := c.nodes[node.Name]; ok {
		ni.Node, ni.Usage = node, usage
		ni.Ready() // works out the node's facts here once, for every snapshot copy to inherit
		c.touchLocked(node.Name)
		return
	}
	ni := framework.NewNodeInfo(node)
	ni.Usage = usage
	ni.Ready()
	for k := range c.byNode[node.Name] {
		ni.AddPod(c.pods[k].pod)
	}
	c.nodes[node.Name] = ni
	c.touchLocked(node.Name)
	c.structGen = c.gen
}

// RemoveNode forgets a node; its pods stay known in case it comes back.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; !ok {
		return
	}
	delete(c.nodes, name)
	delete(c.withUsage, name)
	c.touchLocked(name)
	c.structGen = c.gen
}

// SetPod records a pod as the API shows it. A pod bound to a node counts there (replacing an
// assumption about it); a pod without a node, or one that finished, counts nowhere.
func (c *Cache) SetPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(pod)
	counts := pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	if e, ok := c.pods[k]; ok && counts && e.node == pod.Spec.NodeName && framework.SameAccounting(e.pod, pod) {
		// The usual case: the binding of an assumed pod, or a status change, confirmed. The
		// node's sums stay as they are, so its snapshot copy stays valid.
		delete(c.assumed, k)
		c.pods[k] = podEntry{pod: pod, node: e.node}
		return
	}
	c.removeLocked(k)
	if !counts {
		return
	}
	c.addLocked(k, podEntry{pod: pod, node: pod.Spec.NodeName})
}

// RemovePod forgets a deleted pod.
func (c *Cache) RemovePod(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(namespace + "/" + name)
}

// Assume counts pod on node now, before its binding is observed. Until SetPod confirms it,
// Forget drops it, or the TTL passes, the node's room reflects it.
func (c *Cache) Assume(pod *corev1.Pod, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The pod is kept as given, not copied with its node set: the entry carries the node, and
	// the pod (the informer's object) is only read.
	k := key(pod)
	c.removeLocked(k)
	c.addLocked(k, podEntry{pod: pod, node: node, assumed: true, deadline: c.clock.Now().Add(c.ttl)})
}

// Forget drops an assumption (a failed bind); a confirmed pod is left alone.
func (c *Cache) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := namespace + "/" + name
	if e, ok := c.pods[k]; ok && e.assumed {
		c.removeLocked(k)
	}
}

// IsAssumed reports whether namespace/name is assumed and not yet confirmed.
func (c *Cache) IsAssumed(namespace, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[namespace+"/"+name]
	return ok && e.assumed
}

// Snapshot is a copy of the cache's nodes, in name order, for one goroutine (the scheduling
// loop) to read without holding the cache's lock. Cache.UpdateSnapshot brings it up to date
// by copying only the nodes that changed since its last update: with thousands of nodes,
// copying them all for every pod would cost more than scheduling it. The zero value is an
// empty snapshot, ready for UpdateSnapshot.
type Snapshot struct {
	nodes []*framework.NodeInfo
	// store holds the nodes themselves, in name order: a search over hundreds of them then
	// walks memory in order instead of chasing a pointer to a cache miss for each.
	store        []framework.NodeInfo
	copies       int // nodes copied from the cache so far, for tests
	index        map[string]int
	gen          uint64
	built        bool
	usageChecked time.Time
}

// Nodes are the snapshot's nodes in name order. They belong to the snapshot: callers must not
// change them or keep them, since the next UpdateSnapshot overwrites them in place.
func (s *Snapshot) Nodes() []*framework.NodeInfo { return s.nodes }

// UpdateSnapshot drops expired assumptions and brings s up to date. A usage report older than
// DefaultUsageMaxAge (or as far in the future) is left out of the snapshot, so strategies,
// which have no clock, see only usage worth trusting.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if now.After(c.nextExpiry) {
		c.expireLocked(now)
	}
	// The log reaches back to s.gen when its oldest entry is at most one past it.
	logCovers := len(c.changes) > 0 && c.changes[0].gen <= s.gen+1
	var cloned []int
	rebuilt := false
	switch {
	case !s.built || c.structGen > s.gen || (c.gen > s.gen && !logCovers):
		names := make([]string, 0, len(c.nodes))
		for name := range c.nodes {
			names = append(names, name)
		}
		slices.Sort(names)
		s.store = make([]framework.NodeInfo, len(names))
		s.nodes = make([]*framework.NodeInfo, len(names))
		s.index = make(map[string]int, len(names))
		for i, name := range names {
			c.nodes[name].CopyTo(&s.store[i])
			s.nodes[i] = &s.store[i]
			s.index[name] = i
		}
		s.copies += len(names)
		s.built, rebuilt = true, true
	case c.gen > s.gen:
		from := sort.Search(len(c.changes), func(i int) bool { return c.changes[i].gen > s.gen })
		copied := map[string]bool{}
		for _, ch := range c.changes[from:] {
			if copied[ch.node] {
				continue
			}
			copied[ch.node] = true
			if i, ok := s.index[ch.node]; ok {
				c.nodes[ch.node].CopyTo(s.nodes[i])
				s.copies++
				cloned = append(cloned, i)
			}
		}
	}
	s.gen = c.gen
	// Usage reports age with the clock, not with changes: every report is judged again when
	// the snapshot was rebuilt or usageRecheck has passed (a report that went stale is
	// noticed within that), and between those only the nodes just copied are.
	if rebuilt || now.Sub(s.usageChecked) >= usageRecheck || now.Before(s.usageChecked) {
		for name := range c.withUsage {
			if i, ok := s.index[name]; ok {
				// A report is never changed in place (SetNode replaces it): sharing it is safe.
				s.nodes[i].Usage = c.fresh(c.nodes[name].Usage, now)
			}
		}
		s.usageChecked = now
		return
	}
	for _, i := range cloned {
		s.nodes[i].Usage = c.fresh(s.nodes[i].Usage, now)
	}
}

// usageRecheck is how often UpdateSnapshot judges every usage report's age again.
const usageRecheck = time.Second

// fresh is u when it is recent enough to trust at now, else nil.
func (c *Cache) fresh(u *framework.Usage, now time.Time) *framework.Usage {
	if u != nil && (now.Sub(u.Time) > c.usageMaxAge || u.Time.Sub(now) > c.usageMaxAge) {
		return nil
	}
	return u
}

// expireLocked drops the assumptions whose deadline passed before now and sets nextExpiry
// to the earliest deadline left.
func (c *Cache) expireLocked(now time.Time) {
	var next time.Time
	for k := range c.assumed {
		e := c.pods[k]
		switch {
		case now.After(e.deadline):
			c.removeLocked(k)
		case next.IsZero() || e.deadline.Before(next):
			next = e.deadline
		}
	}
	c.nextExpiry = next
}

func (c *Cache) addLocked(k string, e podEntry) {
	c.pods[k] = e
	if e.assumed {
		if len(c.assumed) == 0 || e.deadline.Before(c.nextExpiry) {
			c.nextExpiry = e.deadline
		}
		c.assumed[k] = struct{}{}
	}
	set := c.byNode[e.node]
	if set == nil {
		set = map[string]struct{}{}
		c.byNode[e.node] = set
	}
	set[k] = struct{}{}
	if ni, ok := c.nodes[e.node]; ok {
		ni.AddPod(e.pod)
		c.touchLocked(e.node)
	}
}

func (c *Cache) removeLocked(k string) {
	e, ok := c.pods[k]
	if !ok {
		return
	}
	delete(c.pods, k)
	delete(c.assumed, k)
	if set := c.byNode[e.node]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(c.byNode, e.node)
		}
	}
	if ni, ok := c.nodes[e.node]; ok {
		ni.RemovePod(e.pod)
		c.touchLocked(e.node)
	}
}
