package informers

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/informer"
)

func emptySource(string) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch")
		},
	}
}

func delivery(t *testing.T, resource, eventType string, obj any) bus.Delivery {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(bus.Event{Type: eventType, Object: raw})
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Message: bus.Message{RoutingKey: resource + ".x." + eventType, Body: body,
		Headers: map[string]string{bus.HeaderResource: resource}}}
}

func TestHandleRoutesToTheResourceInformer(t *testing.T) {
	f := New(emptySource, Config{})
	pods, nodes := f.Pods(), f.Nodes()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: "5"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	tests := []struct {
		name string
		d    bus.Delivery
	}{
		{"pod", delivery(t, "pods", bus.Added, pod)},
		{"undecodable body is acknowledged", bus.Delivery{Message: bus.Message{RoutingKey: "pods.x", Body: []byte("{"), Headers: map[string]string{bus.HeaderResource: "pods"}}}},
		{"resource nobody caches is acknowledged", delivery(t, "services", bus.Added, map[string]string{"kind": "Service"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.Handle(t.Context(), tt.d); err != nil {
				t.Errorf("Handle = %v, want nil (the bus is a hint)", err)
			}
		})
	}
	byNode, err := pods.Store().ByIndex(PodNodeIndex, "n1")
	if err != nil || len(byNode) != 1 {
		t.Fatalf("pods indexed under n1: %d (err %v), want 1", len(byNode), err)
	}
	if nodes.Store().Len() != 0 {
		t.Errorf("the node cache got %d objects from a pod message", nodes.Store().Len())
	}
	if f.Pods() != pods {
		t.Error("Pods() made a second informer")
	}
}
