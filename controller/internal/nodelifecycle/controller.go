package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// LeaseNamespace holds the kubelets' heartbeat Leases, one per node, named after it.
const LeaseNamespace = "kube-node-lease"

// Event reasons, as Kubernetes' node lifecycle controller writes them.
const (
	EventNodeNotReady          = "NodeNotReady"
	EventNodeReady             = "NodeReady"
	EventTaintManagerEviction  = "TaintManagerEviction"
	EventDeletingNodePods      = "DeletingAllPods"
	DefaultGracePeriod         = 40 * time.Second
	DefaultPodEvictionTimeout  = 300 * time.Second
	DefaultMonitorPeriod       = 5 * time.Second
	DefaultWorkers             = 2
	podNodeIndexMissingMessage = "pods informer has no spec.nodeName index"
)

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Config wires a Controller.
type Config struct {
	Settings
	// MonitorPeriod is how often every node is looked at again, the safety net under the
	// event handlers and the requeue timers.
	MonitorPeriod time.Duration
	Workers       int
	// NodeInformer, LeaseInformer and PodInformer are the shared caches; PodInformer must
	// have an index of pods by spec.nodeName under PodNodeIndex.
	NodeInformer, LeaseInformer, PodInformer *informer.Informer
	PodNodeIndex                             string
	// Nodes also reads nodes: a deletion is confirmed with the apiserver before its pods are
	// force-deleted, as a cache that has not seen a new node yet must not cost that node its
	// pods.
	Nodes    client.Writer[*corev1.Node]
	Pods     client.Writer[*corev1.Pod]
	Recorder Recorder
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Controller is the node lifecycle controller. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg    Config
	nodes  informer.Lister[*corev1.Node]
	leases informer.Lister[*coordinationv1.Lease]
	pods   informer.Lister[*corev1.Pod]
	log    *slog.Logger
	// since is when Start began: no node is judged on heartbeats from before it.
	since time.Time
}

// New returns a controller with its handlers registered; nothing runs until Start. Keys are
// node names: a Node's, its Lease's, and the node a pod is bound to (a pod arriving on a lost
// or deleted node needs the node's decision applied to it too).
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.DefaultToleration <= 0 {
		cfg.DefaultToleration = DefaultPodEvictionTimeout
	}
	if cfg.MonitorPeriod <= 0 {
		cfg.MonitorPeriod = DefaultMonitorPeriod
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	c := &Controller{
		cfg:    cfg,
		nodes:  informer.NewLister[*corev1.Node](cfg.NodeInformer.Store()),
		leases: informer.NewLister[*coordinationv1.Lease](cfg.LeaseInformer.Store()),
		pods:   informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		log:    cfg.Logger.With("controller", "nodelifecycle"),
	}
	c.Controller = reconcile.NewController("nodelifecycle", reconcile.Options{
		// MonitorPeriod is the resync: every node looked at again, the safety net under the
		// event handlers and the requeue timers.
		Workers: cfg.Workers, Resync: cfg.MonitorPeriod, Clock: cfg.Clock, Logger: cfg.Logger,
	}).
		For(cfg.NodeInformer).
		Map(cfg.LeaseInformer, leaseNode).
		Watches(cfg.PodInformer, podsBound).
		Keys(c.keys).
		Complete(c)
	return c
}

// Start reconciles nodes until ctx ends; it waits for the caches first and drains its workers
// before returning.
func (c *Controller) Start(ctx context.Context) error {
	c.since = c.cfg.Clock.Now()
	c.log.Info("started", "gracePeriod", c.cfg.GracePeriod, "podEvictionTimeout", c.cfg.DefaultToleration)
	return c.Controller.Start(ctx)
}

// leaseNode is the node a heartbeat Lease is about.
func leaseNode(obj runtime.Object) []string {
	if key, err := informer.KeyOf(obj); err == nil {
		if ns, name := informer.SplitKey(key); ns == LeaseNamespace {
			return []string{name}
		}
	}
	return nil
}

// podsBound queues the node of a pod that arrives bound, or is bound now.
func podsBound(q reconcile.Queue) informer.Handler {
	add := func(obj runtime.Object) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			q.Add(pod.Spec.NodeName)
		}
	}
	return informer.HandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(old, obj runtime.Object) {
			if o, ok := old.(*corev1.Pod); ok && o.Spec.NodeName == "" {
				add(obj)
			}
		},
	}
}

// keys are every node, and every node name pods are bound to that has no Node: the
// level-triggered safety net for lost events and for nodes deleted while no one watched.
func (c *Controller) keys() []string {
	var keys []string
	nodes, _ := c.nodes.List(nil)
	for _, n := range nodes {
		keys = append(keys, n.Name)
	}
	pods, _ := c.pods.List(nil)
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if _, err := c.nodes.Get("", p.Spec.NodeName); err != nil {
			keys = append(keys, p.Spec.NodeName)
		}
	}
	return keys
}

// Reconcile applies the decision about one node and says when to look again.
func (c *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	after, err := c.sync(ctx, name)
	return reconcile.Result{RequeueAfter: after}, err
}

// sync applies the decision about one node and says when to look again.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.nodes.Get("", name)
	if err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return 0, err
	}
	pods, err := c.pods.ByIndex(c.cfg.PodNodeIndex, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", podNodeIndexMissingMessage, err)
	}
	if node == nil {
		return 0, c.deletePodsOfDeletedNode(ctx, name, pods)
	}
	lease, err := c.leases.Get(LeaseNamespace, name)
	if err != nil {
		lease = nil // never renewed: judged from the node's creation
	}
	plan := Decide(Input{Node: node, Lease: lease, Pods: pods, Now: c.cfg.Clock.Now(), ObservedSince: c.since}, c.cfg.Settings)
	return plan.RequeueAfter, c.apply(ctx, node, plan)
}

func (c *Controller) apply(ctx context.Context, node *corev1.Node, plan Plan) error {
	log := c.log.With("node", node.Name)
	current := node
	if plan.Conditions != nil {
		next := node.DeepCopy()
		next.Status.Conditions = plan.Conditions
		updated, err := c.cfg.Nodes.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("mark node %s unknown: %w", node.Name, err)
		}
		current = updated
		log.Info("node unreachable: conditions set to Unknown")
	}
	if plan.BecameUnreachable {
		c.cfg.Recorder.Eventf(node, corev1.EventTypeNormal, EventNodeNotReady, "Node %s status is now: %s", node.Name, EventNodeNotReady)
	}
	if plan.TaintsChanged {
		next := current.DeepCopy()
		next.Spec.Taints = plan.Taints
		if _, err := c.cfg.Nodes.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update taints of node %s: %w", node.Name, err)
		}
		if plan.Unreachable {
			log.Info("tainted unreachable")
		} else {
			log.Info("node is back: unreachable taints removed")
			c.cfg.Recorder.Eventf(node, corev1.EventTypeNormal, EventNodeReady, "Node %s status is now: %s", node.Name, EventNodeReady)
		}
	}
	var errs []error
	for _, pod := range plan.PodsNotReady {
		if _, err := c.cfg.Pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, EventNodeNotReady, "Node is not ready")
	}
	for _, pod := range plan.Evict {
		c.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, EventTaintManagerEviction, "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
		if err := deletePod(ctx, c.cfg.Pods, pod, nil); err != nil && !gone(err) {
			errs = append(errs, fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		log.Info("evicted pod from unreachable node", "pod", pod.Namespace+"/"+pod.Name)
	}
	return errors.Join(errs...)
}

// deletePodsOfDeletedNode force-deletes the pods of a node the apiserver confirms is gone.
func (c *Controller) deletePodsOfDeletedNode(ctx context.Context, name string, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	if _, err := c.cfg.Nodes.Get(ctx, "", name, metav1.GetOptions{}); err == nil {
		return nil // the cache is behind; the node's own events will bring it here again
	} else if !errors.Is(err, apierror.ErrNotFound) {
		return fmt.Errorf("confirm node %s is gone: %w", name, err)
	}
	plan := Decide(Input{Pods: pods}, c.cfg.Settings)
	zero := int64(0)
	var errs []error
	for _, pod := range plan.ForceDelete {
		if err := deletePod(ctx, c.cfg.Pods, pod, &zero); err != nil && !gone(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s of deleted node %s: %w", pod.Namespace, pod.Name, name, err))
			continue
		}
		c.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, EventDeletingNodePods, "Node %s was deleted: deleting Pod %s/%s", name, pod.Namespace, pod.Name)
		c.log.Info("deleted pod of deleted node", "node", name, "pod", pod.Namespace+"/"+pod.Name)
	}
	return errors.Join(errs...)
}

// gone says a delete found nothing to do: the pod is gone, or its name now holds another pod.
func gone(err error) bool {
	return errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict)
}
