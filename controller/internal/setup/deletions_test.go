package setup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/bus"
)

func TestDeletionsObserve(t *testing.T) {
	const obj = `{"apiVersion":"demo.minik8s.io/v1","kind":"EchoApp","metadata":{"namespace":"ns","name":"app","uid":"u1"},"spec":{"replicas":2}}`
	delivery := func(resource, eventType, object string) bus.Delivery {
		return bus.Delivery{Message: bus.Message{
			RoutingKey: bus.RoutingKey(resource, "ns", "app", []byte(object), nil, eventType),
			Headers:    map[string]string{bus.HeaderResource: resource},
			Body:       []byte(`{"type":"` + eventType + `","object":` + object + `}`),
		}}
	}
	type seen struct{ Resource, Namespace, Name, UID string }
	cases := []struct {
		name string
		d    bus.Delivery
		want []seen
	}{
		{"a custom object deleted", delivery("echoapps.demo.minik8s.io", bus.Deleted, obj),
			[]seen{{"echoapps.demo.minik8s.io", "ns", "app", "u1"}}},
		{"a custom object deleted, without the resource header", func() bus.Delivery {
			d := delivery("echoapps.demo.minik8s.io", bus.Deleted, obj)
			d.Headers = nil
			return d
		}(), []seen{{"echoapps.demo.minik8s.io", "ns", "app", "u1"}}},
		{"a custom object modified", delivery("echoapps.demo.minik8s.io", bus.Modified, obj), nil},
		{"a built-in object deleted: its informer has it", delivery("configmaps", bus.Deleted, obj), nil},
		{"undecodable", delivery("echoapps.demo.minik8s.io", bus.Deleted, `{"metadata":`), nil},
		{"no uid", delivery("echoapps.demo.minik8s.io", bus.Deleted, `{"metadata":{"name":"app"}}`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d Deletions
			var got []seen
			d.Subscribe(func(resource string, m *metav1.PartialObjectMetadata) {
				got = append(got, seen{resource, m.Namespace, m.Name, string(m.UID)})
			})
			d.Observe(tc.d)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deletions reported (-want +got):\n%s", diff)
			}
		})
	}
}
