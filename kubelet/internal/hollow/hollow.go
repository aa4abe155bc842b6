package hollow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// LeaseNamespace holds the node Leases.
const LeaseNamespace = "kube-node-lease"

// NodeClient is the part of the Node API the hollow nodes use.
type NodeClient interface {
	Create(ctx context.Context, node *corev1.Node, opts metav1.CreateOptions) (*corev1.Node, error)
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.Node, error)
	UpdateStatus(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
}

// LeaseClient is the part of the Lease API the hollow nodes use.
type LeaseClient interface {
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// PodClient is the part of the Pod API the hollow kubelets use.
type PodClient interface {
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// API is how the hollow nodes reach the apiserver.
type API struct {
	Nodes  NodeClient
	Leases LeaseClient
	Pods   PodClient
}

// Config says how many nodes to simulate and how.
type Config struct {
	Nodes  int
	Prefix string // node i is <Prefix><i>
	// LeaseInterval is how often each Lease is renewed; the renewals are spread evenly over it.
	LeaseInterval time.Duration
	// Workers is how many pod status writes (and registrations) run at once.
	Workers int
}

// Defaults are the values of an empty Config field.
var Defaults = Config{Nodes: 10, Prefix: "hollow-", LeaseInterval: 10 * time.Second, Workers: 8}

// Hollow is the set of simulated nodes. Build with New, then Register, then Start.
type Hollow struct {
	cfg Config
	api API
	clk clock.Clock
	log *slog.Logger

	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease // last written, so a renewal is one round trip
	uids   map[string]string
}

// New returns the hollow nodes; it contacts nothing.
func New(cfg Config, api API, clk clock.Clock, log *slog.Logger) *Hollow {
	if cfg.Nodes <= 0 {
		cfg.Nodes = Defaults.Nodes
	}
	if cfg.Prefix == "" {
		cfg.Prefix = Defaults.Prefix
	}
	if cfg.LeaseInterval <= 0 {
		cfg.LeaseInterval = Defaults.LeaseInterval
	}
	if cfg.Workers <= 0 {
		cfg.Workers = Defaults.Workers
	}
	return &Hollow{cfg: cfg, api: api, clk: clk, log: log,
		leases: map[string]*coordinationv1.Lease{}, uids: map[string]string{}}
}

// NodeName is the name of simulated node i.
func (h *Hollow) NodeName(i int) string { return h.cfg.Prefix + strconv.Itoa(i) }

// owns says whether node is one of ours. Nodes are named by prefix and index, so no set is kept.
func (h *Hollow) owns(node string) bool {
	rest, ok := strings.CutPrefix(node, h.cfg.Prefix)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(rest)
	return err == nil && i >= 0 && i < h.cfg.Nodes && h.NodeName(i) == node
}

// Register creates every Node (or refreshes the status of one that exists) and its Lease,
// Workers at a time.
func (h *Hollow) Register(ctx context.Context) error {
	idx := make(chan int)
	errs := make(chan error, h.cfg.Workers)
	var wg sync.WaitGroup
	for range h.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := h.registerOne(ctx, h.NodeName(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range h.cfg.Nodes {
		select {
		case idx <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(idx)
	// Unblock workers still feeding: drain until they are all gone.
	go func() { wg.Wait(); close(errs) }()
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err != nil {
		return fmt.Errorf("register hollow nodes: %w", err)
	}
	h.log.Info("hollow nodes registered", "nodes", h.cfg.Nodes)
	return nil
}

func (h *Hollow) registerOne(ctx context.Context, name string) error {
	now := h.clk.Now()
	node, err := h.api.Nodes.Create(ctx, newNode(name, now), metav1.CreateOptions{})
	if errors.Is(err, apierror.ErrAlreadyExists) {
		if node, err = h.api.Nodes.Get(ctx, "", name, metav1.GetOptions{}); err == nil {
			node.Status = newNode(name, now).Status
			node, err = h.api.Nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	h.mu.Lock()
	h.uids[name] = string(node.UID)
	h.mu.Unlock()
	return h.renewLease(ctx, name)
}

// newNode is a Ready node with the fixed hollow capacity. Its InternalIP is loopback: nothing
// listens for logs on a hollow node.
func newNode(name string, now time.Time) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	t := metav1.NewTime(now)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "minik8s.io/hollow": "true"}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res.DeepCopy(),
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: name}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", Message: "hollow kubelet is posting ready status",
				LastHeartbeatTime: t, LastTransitionTime: t}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "hollow", OperatingSystem: "linux"},
		},
	}
}

// Start renews the Leases and plays the kubelets until ctx ends; it returns nil then.
func (h *Hollow) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.leaseLoop(ctx) }()
	go func() { defer wg.Done(); h.podLoop(ctx) }()
	wg.Wait()
	return nil
}

// leaseLoop renews one Lease every LeaseInterval/Nodes, so each is renewed once per interval
// and the load on the apiserver is even rather than a burst every interval.
func (h *Hollow) leaseLoop(ctx context.Context) {
	step := h.cfg.LeaseInterval / time.Duration(h.cfg.Nodes)
	for i := 0; ; i = (i + 1) % h.cfg.Nodes {
		t := h.clk.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := h.renewLease(ctx, h.NodeName(i)); err != nil && ctx.Err() == nil {
			h.log.Warn("renewing lease", "node", h.NodeName(i), "err", err)
		}
	}
}

// renewLease moves the Lease's renewTime to now, creating it when missing; after a conflict
// the next renewal starts from a fresh read.
func (h *Hollow) renewLease(ctx context.Context, name string) error {
	now := metav1.NewMicroTime(h.clk.Now())
	holder, dur := name, int32(4*h.cfg.LeaseInterval/time.Second)
	h.mu.Lock()
	cur, uid := h.leases[name], h.uids[name]
	h.mu.Unlock()
	var err error
	if cur == nil {
		cur, err = h.api.Leases.Get(ctx, LeaseNamespace, name, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now}}
			if uid != "" {
				// The Lease goes with its Node.
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(uid)}}
			}
			cur, err = h.api.Leases.Create(ctx, l, metav1.CreateOptions{})
			h.setLease(name, cur, err)
			return err
		}
		if err != nil {
			return err
		}
	}
	next := cur.DeepCopy()
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds, next.Spec.RenewTime = &holder, &dur, &now
	updated, err := h.api.Leases.Update(ctx, next, metav1.UpdateOptions{})
	h.setLease(name, updated, err)
	return err
}

func (h *Hollow) setLease(name string, l *coordinationv1.Lease, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		delete(h.leases, name)
		return
	}
	h.leases[name] = l
}
