package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyPruneAndClusterInfoDumpOnMakeUp runs two verbs of the real kubectl that walk many
// kinds on the make up cluster: `apply --prune -l` without an allowlist lists every kind of its
// default prune set (v1 ReplicationControllers among them) and deletes what left the directory,
// and `cluster-info dump --output-directory` writes each kind's list and the pods' logs.
func TestApplyPruneAndClusterInfoDumpOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-prune")
	real := c.kubectls(t)[0]
	label := "app=" + ns
	dir := t.TempDir()
	object := func(kind, name string, labelled bool) string {
		labels := ""
		if labelled {
			labels = fmt.Sprintf(", labels: {app: %s}", ns)
		}
		body := fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata: {name: %s, namespace: %s%s}\n", kind, name, ns, labels)
		switch kind {
		case "ConfigMap":
			body += "data: {k: v}\n"
		case "Service":
			body += "spec: {ports: [{port: 80}]}\n"
		}
		return body
	}
	writeFile(t, filepath.Join(dir, "keep.yaml"), object("ConfigMap", "keep", true))
	writeFile(t, filepath.Join(dir, "gone.yaml"), object("ConfigMap", "gone", true)+"---\n"+object("Service", "gone", true))
	// Not in the directory and not labelled: never the prune's business.
	other := filepath.Join(t.TempDir(), "other.yaml")
	writeFile(t, other, object("ConfigMap", "unlabelled", false))
	real.ok(t, "apply", "-f", other)

	out := real.ok(t, "apply", "--prune", "-l", label, "-f", dir+"/").stdout
	for _, want := range []string{"configmap/keep created", "configmap/gone created", "service/gone created"} {
		if !strings.Contains(out, want) {
			t.Errorf("first apply lacks %q:\n%s", want, out)
		}
	}
	if err := os.Remove(filepath.Join(dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	out = real.ok(t, "apply", "--prune", "-l", label, "-f", dir+"/").stdout
	for _, want := range []string{"configmap/keep unchanged", "configmap/gone pruned", "service/gone pruned"} {
		if !strings.Contains(out, want) {
			t.Errorf("the apply after removing gone.yaml lacks %q:\n%s", want, out)
		}
	}
	left := real.ok(t, "-n", ns, "get", "configmaps,services", "-o", "name").stdout
	for name, want := range map[string]bool{"configmap/keep": true, "configmap/unlabelled": true, "configmap/gone": false, "service/gone": false} {
		if got := strings.Contains(left, name+"\n"); got != want {
			t.Errorf("after the prune, %s there: %t, want %t\n%s", name, got, want, left)
		}
	}

	// A pod that logged a line, for the dump to fetch through its kubelet.
	pod := filepath.Join(t.TempDir(), "pod.yaml")
	writeFile(t, pod, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: talker, namespace: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: minik8s/busybox:1.0, command: ["sh", "-c", "echo hello from %s; sleep 3600"]}]
`, ns, ns))
	real.ok(t, "apply", "-f", pod)
	c.waitPodRunning(t, ns, "talker")
	eventually(t, commandTimeout, "talker's log line", func() bool {
		r := real.run(t, "-n", ns, "logs", "talker")
		return r.err == nil && strings.Contains(r.stdout, "hello from "+ns)
	})

	dump := filepath.Join(t.TempDir(), "dump")
	out = real.ok(t, "cluster-info", "dump", "--namespaces", ns+",default", "--output-directory", dump).stdout
	if !strings.Contains(out, "Cluster info dumped to "+dump) {
		t.Errorf("cluster-info dump printed %q", out)
	}
	lists := map[string]string{
		"nodes.json":                           "NodeList",
		ns + "/events.json":                    "EventList",
		ns + "/replication-controllers.json":   "ReplicationControllerList",
		ns + "/services.json":                  "ServiceList",
		ns + "/daemonsets.json":                "DaemonSetList",
		ns + "/deployments.json":               "DeploymentList",
		ns + "/replicasets.json":               "ReplicaSetList",
		ns + "/pods.json":                      "PodList",
		"default/replication-controllers.json": "ReplicationControllerList",
	}
	for file, kind := range lists {
		data, err := os.ReadFile(filepath.Join(dump, file))
		if err != nil {
			t.Errorf("dump lacks %s: %v", file, err)
			continue
		}
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(data, &list); err != nil || list.Kind != kind {
			t.Errorf("%s is not a %s (%v):\n%.300s", file, kind, err, data)
			continue
		}
		if (file == "nodes.json" || file == ns+"/pods.json") && len(list.Items) == 0 {
			t.Errorf("%s lists nothing", file)
		}
	}
	logs, err := os.ReadFile(filepath.Join(dump, ns, "talker", "logs.txt"))
	if err != nil || !strings.Contains(string(logs), "==== START logs for container c of pod "+ns+"/talker ====") ||
		!strings.Contains(string(logs), "hello from "+ns) {
		t.Errorf("talker's logs in the dump (%v):\n%s", err, logs)
	}
}
