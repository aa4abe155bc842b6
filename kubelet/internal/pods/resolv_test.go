package pods

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/runtime"
)

func resolvMounts(cfg runtime.ContainerConfig) []runtime.Mount {
	var out []runtime.Mount
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/etc/resolv.conf" {
			out = append(out, m)
		}
	}
	return out
}

func TestPodResolvConf(t *testing.T) {
	hostConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(hostConf, []byte("search corp.example\nnameserver 10.0.0.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(c *Config) {
		c.ClusterDNS, c.ClusterDomain, c.ResolvConf = []string{"169.254.20.10"}, "cluster.local", hostConf
	})
	cluster := newPod("p1", corev1.RestartPolicyAlways, "app")
	node := newPod("p2", corev1.RestartPolicyAlways, "app")
	node.Spec.DNSPolicy = corev1.DNSDefault
	for _, p := range []*corev1.Pod{cluster, node} {
		h.m.Update(p)
		h.settle(p.Name+" running", func() bool { return h.latest(p.UID).Phase == corev1.PodRunning })
	}

	path := h.m.builder.ResolvConfPath(string(cluster.UID))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the ClusterFirst pod's resolv.conf: %v", err)
	}
	want := "search default.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 169.254.20.10\noptions ndots:5\n"
	if string(got) != want {
		t.Errorf("resolv.conf = %q, want %q", got, want)
	}
	app, ok := h.creates.last(containerPrefix(cluster, "app"))
	if !ok {
		t.Fatal("no app container created for p1")
	}
	if d := cmp.Diff([]runtime.Mount{{HostPath: path, ContainerPath: "/etc/resolv.conf"}}, resolvMounts(app)); d != "" {
		t.Errorf("p1's app container resolv.conf mount (-want +got):\n%s", d)
	}
	sandbox, _ := h.creates.last(containerPrefix(cluster, "POD"))
	if m := resolvMounts(sandbox); len(m) != 0 {
		t.Errorf("the sandbox mounts %v: only app containers resolve names", m)
	}

	// Default and no dnsConfig: the runtime's own copy of the node's, no file.
	if _, err := os.Stat(h.m.builder.ResolvConfPath(string(node.UID))); !os.IsNotExist(err) {
		t.Errorf("the Default pod has a resolv.conf of its own: %v", err)
	}
	app, _ = h.creates.last(containerPrefix(node, "app"))
	if m := resolvMounts(app); len(m) != 0 {
		t.Errorf("the Default pod's container mounts %v", m)
	}
}

func TestPodResolvConfUnknownPolicyFailsTheSandbox(t *testing.T) {
	h := newHarness(t)
	p := newPod("p1", corev1.RestartPolicyAlways, "app")
	p.Spec.DNSPolicy = "Cluster"
	events := h.eventLog()
	h.m.Update(p)
	h.settle("a FailedCreatePodSandBox event naming the policy", func() bool {
		return slices.ContainsFunc(events(), func(e string) bool {
			return strings.Contains(e, "FailedCreatePodSandBox") && strings.Contains(e, `"Cluster"`)
		})
	})
	if _, ok := h.creates.last(containerPrefix(p, "POD")); ok {
		t.Error("a sandbox was created for a pod whose DNS cannot be worked out")
	}
}

func containerPrefix(p *corev1.Pod, container string) string {
	return "k8s_" + container + "_" + p.Name + "_"
}
