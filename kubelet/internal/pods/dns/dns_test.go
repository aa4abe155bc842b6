package dns

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var host = ResolvConf{Nameservers: []string{"10.255.255.53", "10.255.255.54"}, Searches: []string{"corp.example", "example"}, Options: []string{"timeout:2", "rotate"}}

func pod(policy corev1.DNSPolicy, hostNetwork bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"},
		Spec:       corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: cfg},
	}
}

func str(s string) *string { return &s }

func TestForPod(t *testing.T) {
	cluster := Config{ClusterDNS: []string{"169.254.20.10"}, ClusterDomain: "cluster.local", Host: host}
	clusterFirst := &ResolvConf{
		Nameservers: []string{"169.254.20.10"},
		Searches:    []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"},
		Options:     []string{"ndots:5"},
	}
	merge := &corev1.PodDNSConfig{
		Nameservers: []string{"192.0.2.53", "169.254.20.10"},
		Searches:    []string{"extra.example", "cluster.local"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: str("2")}, {Name: "edns0"}, {Name: "timeout", Value: str("1")}},
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		cfg  Config
		want *ResolvConf
	}{
		{"ClusterFirst", pod(corev1.DNSClusterFirst, false, nil), cluster, clusterFirst},
		{"no policy is ClusterFirst", pod("", false, nil), cluster, clusterFirst},
		{"ClusterFirst without a cluster DNS: the runtime's copy of the node's", pod(corev1.DNSClusterFirst, false, nil), Config{ClusterDomain: "cluster.local", Host: host}, nil},
		{"ClusterFirst without a cluster domain: the node's search path only", pod(corev1.DNSClusterFirst, false, nil), Config{ClusterDNS: []string{"169.254.20.10"}, Host: host},
			&ResolvConf{Nameservers: []string{"169.254.20.10"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:5"}}},
		{"ClusterFirst on the host network falls back to Default", pod(corev1.DNSClusterFirst, true, nil), cluster, nil},
		{"ClusterFirstWithHostNet on the host network", pod(corev1.DNSClusterFirstWithHostNet, true, nil), cluster, clusterFirst},
		{"ClusterFirstWithHostNet off it", pod(corev1.DNSClusterFirstWithHostNet, false, nil), cluster, clusterFirst},
		{"Default", pod(corev1.DNSDefault, false, nil), cluster, nil},
		{"None", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: str("1")}}}), cluster,
			&ResolvConf{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a.example"}, Options: []string{"ndots:1"}}},
		{"None without dnsConfig: empty", pod(corev1.DNSNone, false, nil), cluster, &ResolvConf{}},
		{"ClusterFirst merged with dnsConfig: appended, deduplicated, the pod's options win", pod(corev1.DNSClusterFirst, false, merge), cluster, &ResolvConf{
			Nameservers: []string{"169.254.20.10", "192.0.2.53"},
			Searches:    []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example", "extra.example"},
			Options:     []string{"ndots:2", "edns0", "timeout:1"},
		}},
		{"Default merged with dnsConfig: on the node's", pod(corev1.DNSDefault, false, merge), cluster, &ResolvConf{
			Nameservers: []string{"10.255.255.53", "10.255.255.54", "192.0.2.53"}, // the fourth is over the limit
			Searches:    []string{"corp.example", "example", "extra.example", "cluster.local"},
			Options:     []string{"timeout:1", "rotate", "ndots:2", "edns0"},
		}},
		{"hostNetwork ClusterFirst merged: on the node's", pod(corev1.DNSClusterFirst, true, &corev1.PodDNSConfig{Searches: []string{"x.example"}}), cluster, &ResolvConf{
			Nameservers: host.Nameservers, Searches: []string{"corp.example", "example", "x.example"}, Options: host.Options,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := ForPod(tt.pod, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ForPod (-want +got):\n%s", d)
			}
		})
	}
}

func TestForPodLimits(t *testing.T) {
	cfg := Config{ClusterDNS: []string{"169.254.20.10"}, ClusterDomain: "cluster.local"}
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("d%02d.example", i)
	}
	long := strings.Repeat("a", 254)
	p := pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
		Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"},
		Searches:    append([]string{long}, many...),
	})
	got, warnings, err := ForPod(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"169.254.20.10", "192.0.2.1", "192.0.2.2"}, got.Nameservers); d != "" {
		t.Errorf("nameservers (-want +got):\n%s", d)
	}
	// 3 cluster domains, the long one dropped, then 28 of the 40 fit the first 32.
	if len(got.Searches) != 31 || got.Searches[3] != "d00.example" || got.Searches[30] != "d27.example" {
		t.Errorf("searches = %q, want the cluster's three and d00..d27", got.Searches)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "192.0.2.2") || !strings.Contains(warnings[1], "Search Line limits") {
		t.Errorf("warnings = %q, want one for nameservers and one for the search line", warnings)
	}

	// The line's length: domains go from the end until it fits.
	var wide []string
	for i := range 30 {
		wide = append(wide, fmt.Sprintf("%s.%02d", strings.Repeat("w", 80), i))
	}
	got, warnings, _ = ForPod(pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: wide}), cfg)
	if n := len(strings.Join(got.Searches, " ")); n > MaxSearchListChars || len(got.Searches) != 24 || len(warnings) != 1 {
		t.Errorf("%d searches, %d characters, warnings %q; want the first 24 (at most %d characters) and a warning", len(got.Searches), n, warnings, MaxSearchListChars)
	}
}

func TestForPodUnknownPolicy(t *testing.T) {
	if _, _, err := ForPod(pod("Cluster", false, nil), Config{}); err == nil || !strings.Contains(err.Error(), `"Cluster"`) {
		t.Errorf("ForPod with an unknown policy = %v, want an error naming it", err)
	}
}

func TestParse(t *testing.T) {
	in := `# generated
domain old.example
search corp.example example. .
nameserver 10.255.255.53 ; primary
nameserver 127.0.0.53
options edns0 trust-ad
options ndots:1
sortlist 10.0.0.0
`
	want := ResolvConf{Nameservers: []string{"10.255.255.53", "127.0.0.53"}, Searches: []string{"corp.example", "example"}, Options: []string{"edns0", "trust-ad", "ndots:1"}}
	if d := cmp.Diff(want, Parse([]byte(in))); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
}

func TestRender(t *testing.T) {
	rc := ResolvConf{Nameservers: []string{"169.254.20.10"}, Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}
	want := "search prod.svc.cluster.local svc.cluster.local cluster.local\nnameserver 169.254.20.10\noptions ndots:5\n"
	if got := string(rc.Render()); got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	if got := string((ResolvConf{}).Render()); got != "" {
		t.Errorf("Render of nothing = %q, want empty", got)
	}
	if d := cmp.Diff(rc, Parse(rc.Render())); d != "" {
		t.Errorf("Parse(Render) (-want +got):\n%s", d)
	}
}
