package bus_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/bus"
)

func TestRoutingKey(t *testing.T) {
	tests := []struct {
		name               string
		resource, ns, obj  string
		prev               string // the replaced value, for a modification
		objName, eventType string
		want               string
	}{
		{name: "scheduled pod", resource: "pods", ns: "default", objName: "web", obj: `{"spec":{"nodeName":"node-1"}}`, eventType: bus.Added, want: "pods.node.node-1.added"},
		{name: "node name with dots", resource: "pods", ns: "default", objName: "web", obj: `{"spec":{"nodeName":"n1.rack2.local"}}`, eventType: bus.Modified, want: "pods.node.n1_rack2_local.modified"},
		{name: "unscheduled pod", resource: "pods", ns: "default", objName: "web", obj: `{"spec":{}}`, eventType: bus.Added, want: "pods.unscheduled.added"},
		{name: "undecodable pod", resource: "pods", ns: "default", objName: "web", obj: `{`, eventType: bus.Deleted, want: "pods.unscheduled.deleted"},
		{name: "bound pod, status only", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Pending"}}`,
			obj:  `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Running","podIP":"10.0.0.2"}}`,
			want: "pods.node.n1.status"},
		{name: "unscheduled pod, status only", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{},"status":{"phase":"Pending"}}`,
			obj:  `{"metadata":{"name":"web"},"spec":{},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False"}]}}`,
			want: "pods.unscheduled.status"},
		{name: "status to a terminal phase", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}`,
			obj:  `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Failed"}}`,
			want: "pods.node.n1.modified"},
		{name: "status within terminal phases", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Failed"}}`,
			obj:  `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Succeeded"}}`,
			want: "pods.node.n1.status"},
		{name: "binding", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{},"status":{"phase":"Pending"}}`,
			obj:  `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Pending"}}`,
			want: "pods.node.n1.modified"},
		{name: "metadata and status", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}`,
			obj:  `{"metadata":{"name":"web","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"nodeName":"n1"},"status":{"phase":"Running","reason":"x"}}`,
			want: "pods.node.n1.modified"},
		{name: "modification, previous value unknown", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			obj: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}`, want: "pods.node.n1.modified"},
		{name: "modification, previous value undecodable", resource: "pods", ns: "default", objName: "web", eventType: bus.Modified,
			prev: `{"metadata":`, obj: `{"metadata":{"name":"web"},"spec":{"nodeName":"n1"}}`, want: "pods.node.n1.modified"},
		{name: "node", resource: "nodes", objName: "a.b", obj: `{}`, eventType: bus.Modified, want: "nodes.a_b.modified"},
		{name: "namespaced other", resource: "deployments", ns: "kube-system", objName: "dns", obj: `{}`, eventType: bus.Modified, want: "deployments.modified"},
		{name: "cluster-scoped other", resource: "persistentvolumes", objName: "pv1", obj: `{}`, eventType: bus.Deleted, want: "persistentvolumes.deleted"},
		{name: "custom resource", resource: "echoapps.demo.minik8s.io", ns: "default", objName: "e1", obj: `{}`, eventType: bus.Deleted, want: "echoapps_demo_minik8s_io.deleted"},
		{name: "custom resource, modified", resource: "echoapps.demo.minik8s.io", ns: "default", objName: "e1", obj: `{}`, eventType: bus.Modified, want: "echoapps_demo_minik8s_io.modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev json.RawMessage
			if tt.prev != "" {
				prev = json.RawMessage(tt.prev)
			}
			got := bus.RoutingKey(tt.resource, tt.ns, tt.objName, json.RawMessage(tt.obj), prev, tt.eventType)
			if got != tt.want {
				t.Errorf("RoutingKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEncodeWordRoundTrip(t *testing.T) {
	for _, name := range []string{"node1", "n1.example.com", "a-b.c-d"} {
		t.Run(name, func(t *testing.T) {
			w := bus.EncodeWord(name)
			if got := bus.DecodeWord(w); got != name {
				t.Errorf("DecodeWord(EncodeWord(%q)) = %q", name, got)
			}
			if !bus.Match("x.*", "x."+w) {
				t.Errorf("encoded %q is not one routing-key word", w)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"pods.#", "pods.unscheduled.added", true},
		{"pods.#", "pods", true},
		{"pods.#", "podsx.added", false},
		{"#", "anything.at.all", true},
		{"#", "", true},
		{"pods.*", "pods.added", true},
		{"pods.*", "pods.node.n1.added", false},
		{"pods.node.n1.*", "pods.node.n1.deleted", true},
		{"pods.node.n1.*", "pods.node.n2.deleted", false},
		{"pods.*.*.added", "pods.node.n1.added", true},
		{"*.added", "deployments.added", true},
		{"#.added", "pods.node.n1.added", true},
		{"#.added", "pods.node.n1.modified", false},
		{"pods.#.added", "pods.added", true},
		{"a.#.#.b", "a.b", true},
		{"deployments.modified", "deployments.modified", true},
		{"deployments.modified", "deployments.added", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.key, func(t *testing.T) {
			if got := bus.Match(tt.pattern, tt.key); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.key, got, tt.want)
			}
		})
	}
}

// TestBindingsRouteTable checks the table end to end: which queues receive a
// given change.
func TestBindingsRouteTable(t *testing.T) {
	queues := []string{bus.QueueScheduler, bus.QueueControllerManager, bus.QueueServerless,
		bus.KubeletQueue("n1.lab"), bus.KubeletQueue("n2"), bus.KubeproxyQueue("n1.lab")}
	tests := []struct {
		key  string
		want []string
	}{
		{"pods.node.n1_lab.added", []string{"scheduler", "controller-manager", "serverless", "kubelet.n1.lab"}},
		{"pods.unscheduled.added", []string{"scheduler", "controller-manager", "serverless"}},
		{"pods.node.n1_lab.modified", []string{"scheduler", "controller-manager", "serverless", "kubelet.n1.lab"}},
		{"pods.node.n1_lab.deleted", []string{"scheduler", "controller-manager", "serverless", "kubelet.n1.lab"}},
		{"pods.node.n1_lab.status", []string{"controller-manager", "serverless", "kubelet.n1.lab"}},
		{"pods.unscheduled.status", []string{"scheduler", "controller-manager", "serverless"}},
		{"nodes.n2.modified", []string{"scheduler", "controller-manager", "serverless", "kubelet.n1.lab", "kubelet.n2"}},
		{"deployments.modified", []string{"controller-manager", "serverless"}},
		{"storageclasses.added", []string{"controller-manager"}},
		{"services.added", []string{"controller-manager", "kubelet.n1.lab", "kubelet.n2", "kubeproxy.n1.lab"}},
		{"endpoints.modified", []string{"controller-manager", "kubeproxy.n1.lab"}},
		{"endpointslices.added", []string{"controller-manager", "kubeproxy.n1.lab"}},
		{"ingresses.deleted", []string{"controller-manager", "kubeproxy.n1.lab"}},
		{"functions.added", []string{"controller-manager", "serverless"}},
		{"configmaps.deleted", []string{"controller-manager"}},
		{"clusterroles.modified", []string{"controller-manager"}},
		{"rolebindings.added", []string{"controller-manager"}},
		{"events.added", nil},
		// Custom objects' deletions reach the garbage collector; their other changes nobody.
		{"echoapps_demo_minik8s_io.deleted", []string{"controller-manager"}},
		{"echoapps_demo_minik8s_io.added", nil},
		{"echoapps_demo_minik8s_io.modified", nil},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			var got []string
			for _, q := range queues {
				patterns, ok := bus.Bindings(q)
				if !ok {
					t.Fatalf("Bindings(%q) not in table", q)
				}
				for _, p := range patterns {
					if bus.Match(p, tt.key) {
						got = append(got, q)
						break
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("queues receiving %q (-want +got):\n%s", tt.key, diff)
			}
		})
	}
	if _, ok := bus.Bindings("nobody"); ok {
		t.Errorf("Bindings(nobody) reported ok")
	}
}

func TestDeliveryResource(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		headers map[string]string
		want    string
	}{
		{"header", "pods.node.n1.added", map[string]string{bus.HeaderResource: "pods"}, "pods"},
		{"custom header", "echoapps_demo_minik8s_io.deleted", map[string]string{bus.HeaderResource: "echoapps.demo.minik8s.io"}, "echoapps.demo.minik8s.io"},
		{"key only", "deployments.modified", nil, "deployments"},
		{"custom key only", "echoapps_demo_minik8s_io.deleted", nil, "echoapps.demo.minik8s.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := bus.Delivery{Message: bus.Message{RoutingKey: tt.key, Headers: tt.headers}}
			if got := d.Resource(); got != tt.want {
				t.Errorf("Resource() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	b := bus.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 500 * time.Millisecond, time.Second},
		{1000, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		for range 50 {
			if d := b.Delay(tt.attempt); d < tt.min || d > tt.max {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
}

// A retired pattern must not be one the queue still binds: unbinding it on connect would
// drop what the queue wants.
func TestRetiredBindingsAreNotBound(t *testing.T) {
	for _, q := range []string{bus.QueueScheduler, bus.QueueControllerManager, bus.QueueServerless, bus.KubeletQueue("n1"), bus.KubeproxyQueue("n1")} {
		bound, _ := bus.Bindings(q)
		for _, p := range bus.RetiredBindings(q) {
			if slices.Contains(bound, p) {
				t.Errorf("queue %s: retired pattern %q is still in its bindings", q, p)
			}
		}
	}
	if len(bus.RetiredBindings(bus.QueueScheduler)) == 0 {
		t.Errorf("the scheduler queue's old pods.# binding is not retired")
	}
}
