package informer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/scheme"
)

// namespacedClient is the shape of a typed REST client (shared/client.Typed): List and Watch
// take the namespace as an argument.
type namespacedClient[L runtime.Object] interface {
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// ForNamespace adapts a typed client to a ListerWatcher over one namespace ("" for all
// namespaces or for cluster-scoped resources).
func ForNamespace[L runtime.Object](c namespacedClient[L], namespace string) ListerWatcher {
	return ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, namespace, opts)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, namespace, opts)
		},
	}
}

// ApplyRaw is Apply for a bus message: eventType is "ADDED", "MODIFIED" or "DELETED" and raw
// the object's JSON with apiVersion and kind, as the outbox publishes it.
func (i *Informer) ApplyRaw(eventType string, raw []byte) (bool, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return false, fmt.Errorf("decode %s event: %w", eventType, err)
	}
	switch t := watch.EventType(eventType); t {
	case watch.Added, watch.Modified, watch.Deleted:
		return i.Apply(t, obj)
	default:
		return false, fmt.Errorf("bus event type %q: want ADDED, MODIFIED or DELETED", eventType)
	}
}

// ApplyEvent is ApplyRaw for a whole bus message body ({"type": ..., "object": ...}), decoded
// in one pass straight into into, an empty object of the type the message carries (the
// consumer knows it from the message's resource header). Decoding the envelope first and the
// object after would read every message two or three times, which is most of what a busy
// consumer spends its CPU on.
func (i *Informer) ApplyEvent(body []byte, into runtime.Object) (bool, error) {
	env := struct {
		Type   string `json:"type"`
		Object any    `json:"object"`
	}{Object: into}
	if err := utiljson.Unmarshal(body, &env); err != nil {
		return false, fmt.Errorf("decode bus event: %w", err)
	}
	switch t := watch.EventType(env.Type); t {
	case watch.Added, watch.Modified, watch.Deleted:
		return i.Apply(t, into)
	default:
		return false, fmt.Errorf("bus event type %q: want ADDED, MODIFIED or DELETED", env.Type)
	}
}
