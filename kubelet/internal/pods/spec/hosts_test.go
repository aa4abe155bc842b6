package spec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostsFile(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		ip   string
		want string // the pod's own line
	}{
		{"name only", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, "10.0.0.5", "10.0.0.5\tp\n"},
		{"hostname", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Hostname: "h"}}, "10.0.0.5", "10.0.0.5\th\n"},
		{"hostname and subdomain", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"},
			Spec: corev1.PodSpec{Hostname: "web-0", Subdomain: "nginx"}}, "10.0.0.5", "10.0.0.5\tweb-0.nginx.ns.svc.cluster.local\tweb-0\n"},
		{"no ip yet", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, "", "fe00::2\tip6-allrouters\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := string(HostsFile(tc.pod, tc.ip, "cluster.local"))
			if !strings.HasPrefix(got, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") || !strings.HasSuffix(got, tc.want) {
				t.Errorf("hosts file:\n%s\nwant it to end with %q", got, tc.want)
			}
		})
	}
	aliased := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{HostAliases: []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"a", "b"}}}}}
	if got := string(HostsFile(aliased, "10.0.0.5", "cluster.local")); !strings.HasSuffix(got, "\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n") {
		t.Errorf("hosts file with aliases:\n%s", got)
	}
}
