package outbox

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/shared/bus"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		key                string
		resource, ns, name string
		wantErr            bool
	}{
		{key: "/registry/pods/default/web", resource: "pods", ns: "default", name: "web"},
		{key: "/registry/nodes/n1.example", resource: "nodes", name: "n1.example"},
		{key: "/registry/pods/default/web/extra", wantErr: true},
		{key: "/registry/pods", wantErr: true},
		{key: "/registry/pods//web", wantErr: true},
		{key: "/elsewhere/pods/a/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			r, ns, n, err := parseKey("/registry/", tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseKey error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([]string{tt.resource, tt.ns, tt.name}, []string{r, ns, n}); diff != "" {
				t.Errorf("parseKey (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToMessage(t *testing.T) {
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns1","uid":"u1"},"spec":{"nodeName":"n.1","priority":9007199254740993}}`
	kv := func(key, value string, create, mod int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), CreateRevision: create, ModRevision: mod}
	}
	tests := []struct {
		name    string
		ev      clientv3.Event
		wantKey string
		want    bus.Event
		wantErr bool
	}{
		{
			name:    "create",
			ev:      clientv3.Event{Type: clientv3.EventTypePut, Kv: kv("/registry/pods/ns1/web", pod, 7, 7)},
			wantKey: "pods.node.n_1.added",
			want: bus.Event{Type: bus.Added, Object: json.RawMessage(
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns1","resourceVersion":"7","uid":"u1"},"spec":{"nodeName":"n.1","priority":9007199254740993}}`)},
		},
		{
			name:    "modify",
			ev:      clientv3.Event{Type: clientv3.EventTypePut, Kv: kv("/registry/deployments/ns1/d", `{"kind":"Deployment","metadata":{"name":"d"}}`, 7, 9)},
			wantKey: "deployments.modified",
			want:    bus.Event{Type: bus.Modified, Object: json.RawMessage(`{"kind":"Deployment","metadata":{"name":"d","resourceVersion":"9"}}`)},
		},
		{
			name: "delete carries the last object at the delete's revision",
			ev: clientv3.Event{Type: clientv3.EventTypeDelete,
				Kv:     &mvccpb.KeyValue{Key: []byte("/registry/pods/ns1/web"), ModRevision: 12},
				PrevKv: kv("/registry/pods/ns1/web", pod, 7, 10)},
			wantKey: "pods.node.n_1.deleted",
			want: bus.Event{Type: bus.Deleted, Object: json.RawMessage(
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns1","resourceVersion":"12","uid":"u1"},"spec":{"nodeName":"n.1","priority":9007199254740993}}`)},
		},
		{
			name: "a pod's status-only change, told from the previous value",
			ev: clientv3.Event{Type: clientv3.EventTypePut,
				Kv:     kv("/registry/pods/ns1/web", `{"kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n.1"},"status":{"phase":"Running"}}`, 7, 11),
				PrevKv: kv("/registry/pods/ns1/web", `{"kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"n.1"},"status":{"phase":"Pending"}}`, 7, 10)},
			wantKey: "pods.node.n_1.status",
			want: bus.Event{Type: bus.Modified, Object: json.RawMessage(
				`{"kind":"Pod","metadata":{"resourceVersion":"11","name":"web"},"spec":{"nodeName":"n.1"},"status":{"phase":"Running"}}`)},
		},
		{
			name:    "object without metadata",
			ev:      clientv3.Event{Type: clientv3.EventTypePut, Kv: kv("/registry/nodes/n1", `{"kind":"Node"}`, 3, 3)},
			wantKey: "nodes.n1.added",
			want:    bus.Event{Type: bus.Added, Object: json.RawMessage(`{"kind":"Node","metadata":{"resourceVersion":"3"}}`)},
		},
		{name: "not json", ev: clientv3.Event{Type: clientv3.EventTypePut, Kv: kv("/registry/nodes/n1", `nope`, 3, 3)}, wantErr: true},
		{name: "delete without previous value", ev: clientv3.Event{Type: clientv3.EventTypeDelete, Kv: kv("/registry/nodes/n1", ``, 0, 4)}, wantErr: true},
		{name: "bad key", ev: clientv3.Event{Type: clientv3.EventTypePut, Kv: kv("/registry/x", `{}`, 3, 3)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := toMessage("/registry/", &tt.ev)
			if (err != nil) != tt.wantErr {
				t.Fatalf("toMessage error = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if m.RoutingKey != tt.wantKey {
				t.Errorf("routing key = %q, want %q", m.RoutingKey, tt.wantKey)
			}
			rv := m.Headers[bus.HeaderResourceVersion]
			if want := string(tt.ev.Kv.Key) + "@" + rv; m.ID != want {
				t.Errorf("ID = %q, want %q", m.ID, want)
			}
			got, err := bus.DecodeEvent(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			// Objects compare as JSON values: key order is not part of the contract.
			var wantObj, gotObj any
			if err := json.Unmarshal(tt.want.Object, &wantObj); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got.Object, &gotObj); err != nil {
				t.Fatalf("object is not JSON: %v: %s", err, got.Object)
			}
			if got.Type != tt.want.Type {
				t.Errorf("type = %q, want %q", got.Type, tt.want.Type)
			}
			if diff := cmp.Diff(wantObj, gotObj); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}
