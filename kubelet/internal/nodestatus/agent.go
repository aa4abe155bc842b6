package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// Retry bounds: registration and lease renewal back off between these after a failure, with
// jitter, like Kubernetes' kubelet (which retries leases from 200ms up to 7s).
const (
	minRetry        = 200 * time.Millisecond
	maxRetry        = 7 * time.Second
	podCIDRPoll     = time.Second
	conflictRetries = 5
)

// Agent registers the node and keeps its Lease and status current.
type Agent struct {
	cfg Config
	api API
	clk clock.Clock
	log *slog.Logger

	registered chan struct{} // closed by the first successful Register
	// observed is signalled by Observe and ObserveDeleted: the Node changed.
	observed chan struct{}

	mu         sync.Mutex
	uid        string // of the Node, for the Lease's owner reference
	podCIDR    string
	lastReport time.Time // when status was last written
	lease      *coordinationv1.Lease
	// node is the newest copy of the Node the agent has seen: what its own writes returned
	// and, once the kubelet feeds it its bus-fed cache (fed), what Observe brings. Never
	// modified: it may be the cache's own object.
	node *corev1.Node
	fed  bool
}

// New checks cfg and returns an agent. It does no I/O.
func New(cfg Config, api API, clk clock.Clock, log *slog.Logger) (*Agent, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if api.Nodes == nil || api.Leases == nil {
		return nil, errors.New("nodestatus: API needs both a node and a lease client")
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Agent{
		cfg: cfg, api: api, clk: clk,
		log:        log.With("component", "nodestatus", "node", cfg.Name),
		registered: make(chan struct{}),
		observed:   make(chan struct{}, 1),
	}, nil
}

// Observe tells the agent the Node as the kubelet's node cache (fed by the bus, relisted
// periodically) holds it; Nodes of other names are ignored. From the first call on, the agent
// reads its Node from what it observed and wrote instead of asking the apiserver: it waits for
// its podCIDR without polling and compares its status with the cached one. Pass cached objects
// as they are: the agent never modifies them.
func (a *Agent) Observe(node *corev1.Node) {
	if node == nil || node.Name != a.cfg.Name {
		return
	}
	a.mu.Lock()
	a.fed = true
	a.keepNewestLocked(node)
	a.mu.Unlock()
	a.signal()
}

// ObserveDeleted tells the agent the cache saw its Node deleted: the next status update reads
// the apiserver, finds it gone and registers the node again.
func (a *Agent) ObserveDeleted(name string) {
	if name != a.cfg.Name {
		return
	}
	a.mu.Lock()
	a.fed = true
	a.node = nil
	a.mu.Unlock()
	a.signal()
}

func (a *Agent) signal() {
	select {
	case a.observed <- struct{}{}:
	default:
	}
}

// keepNewestLocked keeps node if it is newer than the one known. Resource versions are etcd
// revisions, so they compare as numbers.
func (a *Agent) keepNewestLocked(node *corev1.Node) {
	if node == nil {
		return
	}
	if a.node == nil || a.node.UID != node.UID || resourceVersion(node) >= resourceVersion(a.node) {
		a.node = node
	}
}

// cachedNode returns the newest Node seen when a cache feeds the agent, nil otherwise.
func (a *Agent) cachedNode() *corev1.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.fed {
		return nil
	}
	return a.node
}

func resourceVersion(n *corev1.Node) int64 {
	v, _ := strconv.ParseInt(n.ResourceVersion, 10, 64)
	return v
}

// Name is the node's name.
func (a *Agent) Name() string { return a.cfg.Name }

// PodCIDR is the block the control plane gave the node, empty until Register succeeds.
func (a *Agent) PodCIDR() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.podCIDR
}

// Registered is closed once the node is registered and its PodCIDR known.
func (a *Agent) Registered() <-chan struct{} { return a.registered }

// Register creates the Node, or, when it exists (a restarted kubelet), brings its labels and
// status up to date; then it waits until the Node has a podCIDR. It tries once: Start keeps
// trying when the apiserver is unreachable.
func (a *Agent) Register(ctx context.Context) error {
	f, err := readFacts(ctx, a.cfg)
	if err != nil {
		return fmt.Errorf("register node %s: %w", a.cfg.Name, err)
	}
	now := a.clk.Now()
	node, err := a.api.Nodes.Create(ctx, newNode(a.cfg, f, a.PodCIDR(), now), metav1.CreateOptions{})
	switch {
	case errors.Is(err, apierror.ErrAlreadyExists):
		if node, err = a.updateExisting(ctx, f); err != nil {
			return fmt.Errorf("register node %s: %w", a.cfg.Name, err)
		}
		a.log.Info("node already registered, updated it")
	case err != nil:
		return fmt.Errorf("register node %s: %w", a.cfg.Name, err)
	default:
		a.log.Info("node registered")
	}
	a.mu.Lock()
	a.uid, a.lastReport = string(node.UID), now
	a.keepNewestLocked(node)
	a.mu.Unlock()

	cidr, err := a.waitPodCIDR(ctx, node)
	if err != nil {
		return fmt.Errorf("register node %s: %w", a.cfg.Name, err)
	}
	a.mu.Lock()
	first := a.podCIDR == ""
	a.podCIDR = cidr
	a.mu.Unlock()
	if first {
		a.log.Info("node has a pod CIDR", "podCIDR", cidr)
		close(a.registered)
	}
	return nil
}

// updateExisting merges the kubelet's labels into an existing Node and writes its status. It
// leaves taints alone: after registration they belong to users and controllers.
func (a *Agent) updateExisting(ctx context.Context, f facts) (*corev1.Node, error) {
	var node *corev1.Node
	err := a.retryOnConflict(ctx, func() error {
		cur, err := a.api.Nodes.Get(ctx, "", a.cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		labels := maps.Clone(cur.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, nodeLabels(a.cfg))
		if !maps.Equal(labels, cur.Labels) {
			cur = cur.DeepCopy()
			cur.Labels = labels
			if cur, err = a.api.Nodes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update labels: %w", err)
			}
		}
		cur = cur.DeepCopy()
		cur.Status = nodeStatus(a.cfg, f, cur.Status, a.clk.Now())
		if node, err = a.api.Nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status: %w", err)
		}
		return nil
	})
	return node, err
}

// waitPodCIDR returns the node's podCIDR once the apiserver has set one. Fed by the node
// cache, it waits for the cache to show it; without one it reads the Node every second.
func (a *Agent) waitPodCIDR(ctx context.Context, node *corev1.Node) (string, error) {
	logged := false
	for {
		if n := a.cachedNode(); n != nil && n.UID == node.UID && n.Spec.PodCIDR != "" {
			return n.Spec.PodCIDR, nil
		}
		if node.Spec.PodCIDR != "" {
			return node.Spec.PodCIDR, nil
		}
		if !logged {
			a.log.Info("waiting for the control plane to assign a pod CIDR")
			logged = true
		}
		a.mu.Lock()
		fed := a.fed
		a.mu.Unlock()
		if fed {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-a.observed:
			}
			continue
		}
		t := a.clk.NewTimer(podCIDRPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-a.observed:
			t.Stop()
			continue
		case <-t.C():
		}
		n, err := a.api.Nodes.Get(ctx, "", a.cfg.Name, metav1.GetOptions{})
		if err != nil {
			a.log.Debug("read node for its pod CIDR", "err", err)
			continue
		}
		node = n
	}
}

// Start registers the node if Register has not succeeded yet (retrying until it does), then
// renews the Lease and keeps the status current until ctx ends. It returns nil then.
func (a *Agent) Start(ctx context.Context) error {
	for failures := 0; a.PodCIDR() == ""; failures++ {
		err := a.Register(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.Error("register node, will retry", "err", err)
		if a.sleep(ctx, backoff(failures, time.Second, 30*time.Second)) != nil {
			return nil
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.leaseLoop(ctx) }()
	go func() { defer wg.Done(); a.statusLoop(ctx) }()
	wg.Wait()
	return nil
}

func (a *Agent) leaseLoop(ctx context.Context) {
	failures := 0
	for {
		wait := a.cfg.LeaseRenewInterval
		if err := a.renewLease(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Error("renew node lease", "err", err)
			wait = min(backoff(failures, minRetry, maxRetry), wait)
			failures++
		} else {
			failures = 0
		}
		if a.sleep(ctx, wait) != nil {
			return
		}
	}
}

// renewLease moves the Lease's renewTime to now, creating the Lease when it is missing. It
// updates from the Lease it last wrote and re-reads only after a conflict, so a renewal is one
// request.
func (a *Agent) renewLease(ctx context.Context) error {
	a.mu.Lock()
	lease, uid := a.lease, a.uid
	a.mu.Unlock()
	now := metav1.NewMicroTime(a.clk.Now())
	holder := a.cfg.Name
	duration := int32(a.cfg.LeaseDuration / time.Second)

	if lease == nil {
		got, err := a.api.Leases.Get(ctx, NodeLeaseNamespace, a.cfg.Name, metav1.GetOptions{})
		switch {
		case errors.Is(err, apierror.ErrNotFound):
			created, err := a.api.Leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: a.cfg.Name, Namespace: NodeLeaseNamespace,
					OwnerReferences: a.ownerRefs(uid),
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: &holder, LeaseDurationSeconds: &duration,
					AcquireTime: &now, RenewTime: &now,
				},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease: %w", err)
			}
			a.setLease(created)
			return nil
		case err != nil:
			return fmt.Errorf("read lease: %w", err)
		}
		lease = got
	}
	next := lease.DeepCopy()
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime = &holder, &duration, &now
	if refs := a.ownerRefs(uid); refs != nil {
		// A Node deleted and registered again has a new uid; an owner reference to the old
		// one would let the garbage collector delete the Lease.
		next.OwnerReferences = refs
	}
	updated, err := a.api.Leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		// Someone else wrote it, or it is gone: read it again next time.
		a.setLease(nil)
		return fmt.Errorf("update lease: %w", err)
	}
	a.setLease(updated)
	return nil
}

func (a *Agent) setLease(l *coordinationv1.Lease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lease = l
}

// ownerRefs make the Lease go when the Node is deleted.
func (a *Agent) ownerRefs(uid string) []metav1.OwnerReference {
	if uid == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.cfg.Name, UID: types.UID(uid)}}
}

func (a *Agent) statusLoop(ctx context.Context) {
	for {
		if err := a.syncStatus(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("update node status", "err", err)
		}
		if a.sleep(ctx, a.cfg.StatusUpdateInterval) != nil {
			return
		}
	}
}

// syncStatus writes the node's status when it changed or a heartbeat is due. It compares with
// the current Node, so changes others made (the node lifecycle controller marking it Unknown)
// are seen and corrected at once rather than at the next heartbeat: the cached one when the
// node cache feeds the agent, else (and after a conflict) the apiserver's.
func (a *Agent) syncStatus(ctx context.Context) error {
	f, err := readFacts(ctx, a.cfg)
	if err != nil {
		return err
	}
	attempt := 0
	return a.retryOnConflict(ctx, func() error {
		attempt++
		cur := a.cachedNode()
		if cur == nil || attempt > 1 {
			cur, err = a.api.Nodes.Get(ctx, "", a.cfg.Name, metav1.GetOptions{})
			if errors.Is(err, apierror.ErrNotFound) {
				// Deleted under us: register again, asking for the same pod CIDR, which the
				// pods here still use.
				a.log.Info("node was deleted, registering it again")
				return a.Register(ctx)
			}
			if err != nil {
				return fmt.Errorf("read node: %w", err)
			}
		}
		now := a.clk.Now()
		next := nodeStatus(a.cfg, f, cur.Status, now)
		a.mu.Lock()
		heartbeatDue := now.Sub(a.lastReport) >= a.cfg.StatusReportInterval
		a.mu.Unlock()
		if !heartbeatDue && !statusChanged(cur.Status, next) {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Status = next
		written, err := a.api.Nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			if errors.Is(err, apierror.ErrNotFound) {
				// Gone since the cache last saw it: the next read finds out and registers.
				a.mu.Lock()
				a.node = nil
				a.mu.Unlock()
			}
			return fmt.Errorf("write node status: %w", err)
		}
		a.mu.Lock()
		a.lastReport = now
		a.keepNewestLocked(written)
		a.mu.Unlock()
		a.log.Debug("node status written", "heartbeat", heartbeatDue)
		return nil
	})
}

// retryOnConflict runs fn again, at once, while it fails with Conflict: it re-reads the Node
// each time, so another try uses the current resourceVersion.
func (a *Agent) retryOnConflict(ctx context.Context, fn func() error) error {
	var err error
	for range conflictRetries {
		if err = fn(); !errors.Is(err, apierror.ErrConflict) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// sleep waits d on the agent's clock; it fails only when ctx ends.
func (a *Agent) sleep(ctx context.Context, d time.Duration) error {
	t := a.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// backoff is base doubled per failure, capped, with up to 20% jitter below so many kubelets
// restarted together do not retry in step.
func backoff(failures int, base, limit time.Duration) time.Duration {
	d := base
	for i := 0; i < failures && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
