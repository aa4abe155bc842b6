package record

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// apiSink writes Events through the API server.
type apiSink struct {
	events *client.Typed[*corev1.Event, *corev1.EventList]
}

// NewAPISink is the Sink components use: Events written through the REST client.
func NewAPISink(c *client.Client) Sink {
	return &apiSink{events: client.MustFor[*corev1.Event, *corev1.EventList](c)}
}

func (s *apiSink) Create(ctx context.Context, namespace string, ev *corev1.Event) (*corev1.Event, error) {
	ev.Namespace = namespace
	return s.events.Create(ctx, ev, metav1.CreateOptions{})
}

func (s *apiSink) Patch(ctx context.Context, namespace, name string, mergePatch []byte) (*corev1.Event, error) {
	return s.events.Patch(ctx, namespace, name, types.MergePatchType, mergePatch)
}
