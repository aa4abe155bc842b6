package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On make up, the system PriorityClasses exist and cannot be deleted, and a pod gets its
// class's priority, with both kubectls.
func TestPriorityClassesOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-priority")
	for _, k := range c.kubectls(t) {
		t.Run(k.name, func(t *testing.T) {
			out := k.ok(t, "get", "priorityclasses").stdout
			for _, want := range []string{"system-cluster-critical", "2000000000", "system-node-critical", "2000001000"} {
				if !strings.Contains(out, want) {
					t.Fatalf("get priorityclasses lacks %q:\n%s", want, out)
				}
			}
			if r := k.run(t, "delete", "priorityclass", "system-node-critical"); r.err == nil ||
				!strings.Contains(r.stderr, "the system-node-critical system priority class cannot be deleted") {
				t.Fatalf("deleting a system class:\n%s", r)
			}
			class, pod := "e2e-high-"+k.name, "prio-"+k.name
			manifest := filepath.Join(t.TempDir(), "priority.yaml")
			if err := os.WriteFile(manifest, []byte(`apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: `+class+`}
value: 1000
description: e2e
---
apiVersion: v1
kind: Pod
metadata: {name: `+pod+`, namespace: `+ns+`}
spec:
  priorityClassName: `+class+`
  restartPolicy: Never
  containers: [{name: c, image: minik8s/busybox:1.0, command: ["true"]}]
`), 0o644); err != nil {
				t.Fatal(err)
			}
			k.run(t, "delete", "priorityclass", class, "--ignore-not-found") // a leftover of an earlier run
			k.ok(t, "apply", "-f", manifest)
			got := k.ok(t, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.spec.priority}").stdout
			if strings.TrimSpace(got) != "1000" {
				t.Fatalf("pod priority %q, want 1000", got)
			}
			k.ok(t, "delete", "priorityclass", class)
		})
	}
}
