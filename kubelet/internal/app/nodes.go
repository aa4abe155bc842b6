package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
)

// nodeListWait is how long the node cache's first list waits for the bus to be bound (the
// connect requests a relist); with the bus down it lists after that anyway.
const nodeListWait = 5 * time.Second

// nodeCache is every Node of the cluster as the kubelet's queue brings them (nodes.*.*): the
// kubelet's own Node, for its pod CIDR and status, and the others, for routes to their pods.
// Like the pod source it is relisted on every bus connect and every relist period, so a lost
// message is repaired.
type nodeCache struct {
	inf *informer.Informer
}

func newNodeCache(cl *client.Client, relist time.Duration, log *slog.Logger) *nodeCache {
	return &nodeCache{inf: informer.New(informer.Config{
		Name:          "nodes",
		ListerWatcher: informer.ForNamespace(client.MustFor[*corev1.Node, *corev1.NodeList](cl), ""),
		NoWatch:       true,
		RelistPeriod:  relist,
		FirstListWait: nodeListWait,
		Logger:        log,
	})}
}

var _ nodenet.Nodes = (*nodeCache)(nil)

// List returns the cached Nodes; they are the cache's own objects.
func (c *nodeCache) List() []*corev1.Node {
	objs := c.inf.Store().List()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

func (c *nodeCache) HasSynced() bool { return c.inf.HasSynced() }

// Start runs the cache until ctx ends.
func (c *nodeCache) Start(ctx context.Context) error { return c.inf.Start(ctx) }

// nodeObserver is what of the kubelet follows its own Node (nodestatus.Agent).
type nodeObserver interface {
	Observe(node *corev1.Node)
	ObserveDeleted(name string)
}

// nodeHandler tells the agent about its own Node and wakes the route reconciler when a Node's
// pod CIDR or InternalIP changed, or a Node came or went.
func nodeHandler(agent nodeObserver, routes func()) informer.Handler {
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if n, ok := obj.(*corev1.Node); ok {
				agent.Observe(n)
				routes()
			}
		},
		UpdateFunc: func(oldObj, newObj runtime.Object) {
			n, ok := newObj.(*corev1.Node)
			if !ok {
				return
			}
			agent.Observe(n)
			if old, ok := oldObj.(*corev1.Node); !ok || nodenet.PeerOf(old) != nodenet.PeerOf(n) {
				routes()
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			if n, ok := informer.DeletedObject(obj).(*corev1.Node); ok {
				agent.ObserveDeleted(n.Name)
				routes()
			}
		},
	}
}

// busHandler is the handler of the kubelet's queue: Node messages go to the node cache, the
// rest (the node's pods) to the pod source. A Node message that cannot be decoded is dropped
// with a warning: the next relist repairs it.
func busHandler(nodes *nodeCache, pods bus.Handler, log *slog.Logger) bus.Handler {
	return func(ctx context.Context, d bus.Delivery) error {
		resource := d.Headers[bus.HeaderResource]
		if resource == "" {
			resource, _, _ = strings.Cut(d.RoutingKey, ".")
		}
		if resource != "nodes" {
			return pods(ctx, d)
		}
		if _, err := nodes.inf.ApplyEvent(d.Body, &corev1.Node{}); err != nil {
			log.Warn("dropping node message", "key", d.RoutingKey, "err", err)
		}
		return nil
	}
}
