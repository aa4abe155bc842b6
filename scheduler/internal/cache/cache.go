package cache

import (
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

// Cache is safe for concurrent use: informer handlers write it while the scheduling loop reads
// snapshots.
type Cache struct {
	clock       clock.Clock
	ttl         time.Duration
	usageMaxAge time.Duration

	mu    sync.Mutex
	nodes map[string]*framework.NodeInfo
	pods  map[string]podEntry // by namespace/name
}

// New returns an empty cache; ttl <= 0 means DefaultAssumeTTL.
func New(clk clock.Clock, ttl time.Duration) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	if ttl <= 0 {
		ttl = DefaultAssumeTTL
	}
	return &Cache{clock: clk, ttl: ttl, usageMaxAge: DefaultUsageMaxAge, nodes: map[string]*framework.NodeInfo{}, pods: map[string]podEntry{}}
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// SetNode adds or replaces a node, keeping the pods already accounted to it, and reads the
// usage its kubelet reports.
func (c *Cache) SetNode(node *corev1.Node) {
	var usage *framework.Usage
	if u, ok := framework.NodeUsage(node); ok {
		usage = &u
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ni, ok := c.nodes[node.Name]; ok {
		ni.Node, ni.Usage = node, usage
		return
	}
	ni := framework.NewNodeInfo(node)
	ni.Usage = usage
	for _, e := range c.pods {
		if e.node == node.Name {
			ni.AddPod(e.pod)
		}
	}
	c.nodes[node.Name] = ni
}

// RemoveNode forgets a node; its pods stay known in case it comes back.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}

// SetPod records a pod as the API shows it. A pod bound to a node counts there (replacing an
// assumption about it); a pod without a node, or one that finished, counts nowhere.
func (c *Cache) SetPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(pod)
	c.removeLocked(k)
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
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
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	k := key(p)
	c.removeLocked(k)
	c.addLocked(k, podEntry{pod: p, node: node, assumed: true, deadline: c.clock.Now().Add(c.ttl)})
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

// Snapshot returns copies of every node's info in name order, after dropping expired
// assumptions. A usage report older than DefaultUsageMaxAge (or as far in the future) is left
// out of the copy, so strategies, which have no clock, see only usage worth trusting. The
// copies are the caller's: the scheduling loop may change them.
func (c *Cache) Snapshot() []*framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for k, e := range c.pods {
		if e.assumed && now.After(e.deadline) {
			c.removeLocked(k)
		}
	}
	out := make([]*framework.NodeInfo, 0, len(c.nodes))
	for _, ni := range c.nodes {
		cp := ni.Clone()
		if u := cp.Usage; u != nil && (now.Sub(u.Time) > c.usageMaxAge || u.Time.Sub(now) > c.usageMaxAge) {
			cp.Usage = nil
		}
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func (c *Cache) addLocked(k string, e podEntry) {
	c.pods[k] = e
	if ni, ok := c.nodes[e.node]; ok {
		ni.AddPod(e.pod)
	}
}

func (c *Cache) removeLocked(k string) {
	e, ok := c.pods[k]
	if !ok {
		return
	}
	delete(c.pods, k)
	if ni, ok := c.nodes[e.node]; ok {
		ni.RemovePod(e.pod)
	}
}
