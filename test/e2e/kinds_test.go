package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPruneServedKinds runs what failed while ReplicationControllers were not served, the
// real kubectl's apply --prune of them (and of NetworkPolicies), on the package's private
// apiserver, and gets the new kinds by their short names.
func TestPruneServedKinds(t *testing.T) {
	srv := sharedServer(t)
	k := kubectls(t, srv)[0]
	ns := "e2e-prune"
	createNamespace(t, k, ns)
	dir := t.TempDir()
	both := filepath.Join(dir, "both.yaml")
	writeFile(t, both, `apiVersion: v1
kind: ConfigMap
metadata: {name: keep, namespace: e2e-prune, labels: {app: x}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drop, namespace: e2e-prune, labels: {app: x}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: e2e-prune, labels: {app: x}}
spec: {podSelector: {}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: e2e-prune, labels: {app: x}}
spec:
  replicas: 0
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: minik8s/busybox:1.0}]}
`)
	one := filepath.Join(dir, "one.yaml")
	writeFile(t, one, `apiVersion: v1
kind: ConfigMap
metadata: {name: keep, namespace: e2e-prune, labels: {app: x}}
`)
	k.ok(t, "apply", "-f", both)
	out := k.ok(t, "-n", ns, "get", "rc,netpol").stdout
	if !strings.Contains(out, "replicationcontroller/web") || !strings.Contains(out, "networkpolicy.networking.k8s.io/deny") {
		t.Fatalf("get rc,netpol:\n%s", out)
	}
	// Without an allowlist kubectl prunes its default kinds, CronJobs, DaemonSets and
	// StatefulSets among them; these name the kinds served here.
	r := k.ok(t, "apply", "--prune", "-l", "app=x", "-f", one, "--prune-allowlist=core/v1/ConfigMap",
		"--prune-allowlist=core/v1/ReplicationController", "--prune-allowlist=networking.k8s.io/v1/NetworkPolicy")
	for _, want := range []string{"configmap/drop pruned", "replicationcontroller/web pruned", "networkpolicy.networking.k8s.io/deny pruned"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("apply --prune: no %q\n%s", want, r)
		}
	}
	k.ok(t, "get", "ingressclass")
}
