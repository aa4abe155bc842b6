package app

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/manager"
	"minik8s.io/shared/scheme"
)

// Every resource a controller caches must reach the controller-manager's queue: a cache that
// only follows relists reacts minutes late.
func TestTheQueueIsBoundToEveryCachedResource(t *testing.T) {
	source := func(*scheme.Resource, bool) informer.ListerWatcher {
		return informer.ListWatchFuncs{
			ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &corev1.List{}, nil },
			WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return nil, errors.New("no watch")
			},
		}
	}
	ccfg := &client.Config{Server: "https://127.0.0.1:1"}
	cl, err := client.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Kubeconfig: "unused", NodeMonitorGracePeriod: 1, PodEvictionTimeout: 1, NodeMonitorPeriod: 1}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	factory := informer.NewFactory(source, informer.FactoryConfig{})
	c := &Context{Config: cfg, ClientConfig: ccfg, Client: cl, Informers: factory}
	for _, ctrl := range controllers {
		ctrl.new(c)
	}
	bindings, _ := bus.Bindings(bus.QueueControllerManager)
	if len(factory.Resources()) == 0 {
		t.Fatal("the controllers asked for no informer")
	}
	if missing := manager.Unbound(factory.Resources(), bindings); len(missing) > 0 {
		t.Errorf("the controller-manager queue is not bound to %v (add them to shared/bus's controllerResources)", missing)
	}
}
