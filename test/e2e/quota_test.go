package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On make up, with both kubectls: a LimitRange gives a pod its defaults and refuses one below
// its minimum, and a ResourceQuota, measured by the controller-manager, counts pods as they
// come and go and refuses the one too many with Kubernetes' message.
func TestResourceQuotaAndLimitRangeOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	for _, k := range c.kubectls(t) {
		t.Run(k.name, func(t *testing.T) {
			ns := c.namespace(t, "e2e-quota-"+k.name)
			dir := t.TempDir()
			// The README's example.
			bounds := filepath.Join("..", "..", "configs", "examples", "quota.yaml")
			k.ok(t, "-n", ns, "apply", "-f", bounds)
			used := func(resource string) string {
				return strings.TrimSpace(k.ok(t, "-n", ns, "get", "quota", "compute", "-o", "jsonpath={.status.used."+strings.ReplaceAll(resource, ".", `\.`)+"}").stdout)
			}
			eventually(t, 2*time.Minute, "the controller-manager measures the quota", func() bool { return used("pods") == "0" })
			table := k.ok(t, "-n", ns, "get", "quota").stdout
			if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 ||
				strings.Join(strings.Fields(lines[0]), " ") != "NAME AGE REQUEST LIMIT" ||
				!strings.Contains(lines[1], "pods: 0/2, requests.cpu: 0/1, requests.memory: 0/1Gi") || !strings.Contains(lines[1], "limits.cpu: 0/2") {
				t.Fatalf("get quota:\n%s", table)
			}

			pod := func(name, resources string) string {
				file := filepath.Join(dir, name+".yaml")
				writeFile(t, file, `apiVersion: v1
kind: Pod
metadata: {name: `+name+`}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: minik8s/busybox:1.0
    command: ["sleep", "3600"]
`+resources)
				return file
			}
			// The LimitRange's defaults, and the annotation that says so.
			k.ok(t, "-n", ns, "create", "-f", pod("first", ""))
			got := k.ok(t, "-n", ns, "get", "pod", "first", "-o",
				`jsonpath={.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.requests.memory} {.metadata.annotations.kubernetes\.io/limit-ranger}`).stdout
			if want := "100m 200m 32Mi LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"; strings.TrimSpace(got) != want {
				t.Fatalf("defaulted pod: %q\nwant %q", got, want)
			}
			if u := used("pods") + " " + used("requests.cpu") + " " + used("limits.cpu"); u != "1 100m 200m" {
				t.Fatalf("used after one pod: %s", u)
			}

			r := k.run(t, "-n", ns, "create", "-f", pod("low", "    resources: {requests: {cpu: 10m}}\n"))
			if want := `pods "low" is forbidden: minimum cpu usage per Container is 50m, but request is 10m`; r.err == nil || !strings.Contains(r.stderr, want) {
				t.Fatalf("below the minimum:\n%s\nwant %q", r, want)
			}

			k.ok(t, "-n", ns, "create", "-f", pod("second", ""))
			r = k.run(t, "-n", ns, "create", "-f", pod("third", ""))
			if want := `pods "third" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2`; r.err == nil || !strings.Contains(r.stderr, want) {
				t.Fatalf("one pod too many:\n%s\nwant %q", r, want)
			}
			if u := used("pods"); u != "2" {
				t.Fatalf("used pods after a refusal: %s", u)
			}

			// Deleting a pod frees its share, and the next one fits.
			k.ok(t, "-n", ns, "delete", "pod", "first")
			eventually(t, 2*time.Minute, "the deleted pod's share freed", func() bool { return used("pods") == "1" && used("requests.cpu") == "100m" })
			k.ok(t, "-n", ns, "create", "-f", pod("third", ""))
			if u := used("pods"); u != "2" {
				t.Fatalf("used pods after the third: %s", u)
			}
		})
	}
}
