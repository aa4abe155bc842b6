package app

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/shared/informer"
)

// nodeList is every Node of the cluster as the kubelet's queue brings them (nodes.*.*) into
// the informer factory's cache: the kubelet's own Node, for its pod CIDR and status, and the
// others, for routes to their pods.
type nodeList struct{ inf *informer.Informer }

var _ nodenet.Nodes = nodeList{}

// List returns the cached Nodes; they are the cache's own objects.
func (c nodeList) List() []*corev1.Node {
	nodes, _ := informer.NewLister[*corev1.Node](c.inf.Store()).List(nil)
	return nodes
}

func (c nodeList) HasSynced() bool { return c.inf.HasSynced() }

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
