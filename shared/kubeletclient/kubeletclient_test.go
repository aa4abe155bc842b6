package kubeletclient

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.Addresses = addrs
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"internal first", node(10250, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "vm"},
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"},
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}), "https://10.0.0.2:10250"},
		{"external next", node(10250, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "vm"},
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}), "https://1.2.3.4:10250"},
		{"host name last", node(11250, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "vm"}), "https://vm:11250"},
		{"ipv6", node(10250, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::2"}), "https://[fd00::2]:10250"},
		{"no port", node(0, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}), ""},
		{"no address", node(10250), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := URL(tc.node)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("URL = %v, want an error", u)
				}
				return
			}
			if err != nil || u.String() != tc.want {
				t.Fatalf("URL = %v, %v; want %s", u, err, tc.want)
			}
		})
	}
}

func TestReady(t *testing.T) {
	n := node(1)
	if Ready(n) {
		t.Error("a node without conditions is ready")
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}, {Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	if Ready(n) {
		t.Error("Ready Unknown counts as ready")
	}
	n.Status.Conditions[1].Status = corev1.ConditionTrue
	if !Ready(n) {
		t.Error("Ready True does not count")
	}
}
