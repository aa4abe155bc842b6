package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rcManifest is a ReplicationController as the classic tutorials write it.
const rcManifest = `apiVersion: v1
kind: ReplicationController
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: 2
  selector:
    app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: minik8s/busybox:1.0
        command: ["sleep", "3600"]
`

// TestReplicationControllerOnMakeUp runs a ReplicationController on the make up cluster with
// both kubectls: its pods start and it counts them ready, `kubectl scale rc` moves them, and
// deleting it takes them.
func TestReplicationControllerOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-rc")
	for _, k := range c.kubectls(t) {
		t.Run(k.name, func(t *testing.T) {
			name := "web-" + k.name
			file := filepath.Join(t.TempDir(), "rc.yaml")
			writeFile(t, file, fmt.Sprintf(rcManifest, name, ns))
			k.ok(t, "apply", "-f", file)

			ready := func(n string) {
				t.Helper()
				eventually(t, 3*time.Minute, name+" ready at "+n, func() bool {
					out := k.run(t, "-n", ns, "get", "rc", name, "-o", "jsonpath={.status.replicas}/{.status.readyReplicas}/{.status.availableReplicas}")
					return out.err == nil && strings.TrimSpace(out.stdout) == n+"/"+n+"/"+n
				})
			}
			ready("2")
			get := k.ok(t, "-n", ns, "get", "rc", name).stdout
			lines := strings.Split(strings.TrimSpace(get), "\n")
			if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME DESIRED CURRENT READY AGE" ||
				!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), name+" 2 2 2 ") {
				t.Errorf("get rc:\n%s", get)
			}
			owners := k.ok(t, "-n", ns, "get", "pods", "-l", "app="+name, "-o",
				`jsonpath={range .items[*]}{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}{"\n"}{end}`).stdout
			if want := strings.Repeat("ReplicationController/"+name+"\n", 2); owners != want {
				t.Errorf("pods' controllers:\n%s\nwant:\n%s", owners, want)
			}

			if out := k.ok(t, "-n", ns, "scale", "rc", name, "--replicas=3").stdout; strings.TrimSpace(out) != "replicationcontroller/"+name+" scaled" {
				t.Errorf("scale printed %q", out)
			}
			ready("3")

			if out := k.ok(t, "-n", ns, "delete", "rc", name).stdout; !strings.Contains(out, fmt.Sprintf("replicationcontroller %q deleted", name)) {
				t.Errorf("delete printed %q", out)
			}
			eventually(t, 3*time.Minute, "the pods of "+name+" gone", func() bool {
				out := k.run(t, "-n", ns, "get", "pods", "-l", "app="+name, "-o", "name")
				return out.err == nil && strings.TrimSpace(out.stdout) == ""
			})
		})
	}
}
