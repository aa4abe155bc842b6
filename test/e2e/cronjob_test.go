package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// TestCronJobAndDrain runs on a one-node cluster made by the scripts: Kubernetes docs' hello
// CronJob (testdata/docs/cronjob.yaml, every minute), created by each kubectl, makes a Job
// whose logs show the date it ran, shown by both kubectls and run by hand with create job
// --from; and a PodDisruptionBudget over a Deployment makes drain retry its
// refused evictions until it gives up, and lets an eviction through once the Deployment grows.
func TestCronJobAndDrain(t *testing.T) {
	c := startNetCluster(t, "cj")
	c.startControlPlane(t, nil, nil)
	node := c.names["cj"]
	cronJobs := client.MustFor[*batchv1.CronJob, *batchv1.CronJobList](c.cl)
	jobs := client.MustFor[*batchv1.Job, *batchv1.JobList](c.cl)
	pdbs := client.MustFor[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](c.cl)
	deploys := client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.cl)
	dir := t.TempDir()
	apply := func(t *testing.T, k kubectl, name, body string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		k.ok(t, "-n", c.ns, "apply", "-f", path)
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("the documentation's hello CronJob applied by either kubectl runs a Job that logs the date and create job --from runs it by hand", func(t *testing.T) {
		manifest := filepath.Join("testdata", "docs", "cronjob.yaml")
		spaces := map[string]kubectl{c.ns: c.kubectlReal, c.ns + "-ours": c.kubectl}
		for ns, k := range spaces {
			if ns != c.ns {
				createNamespace(t, c.kubectlReal, ns)
			}
			if out := k.ok(t, "-n", ns, "create", "-f", manifest).stdout; !strings.Contains(out, "cronjob.batch/hello created") {
				t.Errorf("%s kubectl create:\n%s", k.name, out)
			}
		}
		for ns, k := range spaces {
			// Every minute: the first Job comes at the next minute, and its pod's start may take
			// a while on a busy machine.
			var job batchv1.Job
			eventually(t, 150*time.Second, "the first Job of "+ns+"/hello to complete", func() bool {
				l, err := jobs.List(t.Context(), ns, metav1.ListOptions{})
				if err != nil || len(l.Items) == 0 {
					return false
				}
				job = l.Items[0]
				return job.Status.Succeeded == 1
			})
			cj, err := cronJobs.Get(t.Context(), ns, "hello", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			scheduled, err := time.Parse(time.RFC3339, job.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
			if err != nil || !strings.HasPrefix(job.Name, "hello-") || cj.Status.LastScheduleTime == nil || cj.Status.LastScheduleTime.Time.Before(scheduled) {
				t.Fatalf("the first Job %s (scheduled %q: %v) of a CronJob last scheduled at %v", job.Name,
					job.Annotations[batchv1.CronJobScheduledTimestampAnnotation], err, cj.Status.LastScheduleTime)
			}
			for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
				lines := strings.Split(strings.TrimSpace(k.ok(t, "-n", ns, "logs", "job/"+job.Name).stdout), "\n")
				if len(lines) != 2 || lines[1] != "Hello from the Kubernetes cluster" {
					t.Fatalf("%s kubectl logs job/%s: %q", k.name, job.Name, lines)
				}
				// The date line is when the Job's pod ran: at or after its scheduled minute.
				if ran, err := time.Parse(time.UnixDate, lines[0]); err != nil || ran.Before(scheduled) {
					t.Errorf("%s kubectl logs job/%s: date line %q (%v), want a date from %s on", k.name, job.Name, lines[0], err, scheduled)
				}
				out := k.ok(t, "-n", ns, "get", "cronjobs").stdout
				if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(header,
					[]string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"}) {
					t.Errorf("%s kubectl get cronjobs header %v", k.name, header)
				}
				if row := rowOf(out, "hello"); len(row) < 4 || row[1] != "*" || row[len(row)-4] != "False" {
					t.Errorf("%s kubectl get cronjobs:\n%s", k.name, out)
				}
			}
			name := "hello-by-" + k.name
			k.ok(t, "-n", ns, "create", "job", name, "--from=cronjob/hello")
			j, err := jobs.Get(t.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s kubectl create job --from: %v", k.name, err)
			}
			if j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].UID != cj.UID {
				t.Errorf("%s kubectl create job --from made %s", k.name, dump(j.ObjectMeta))
			}
			k.ok(t, "-n", ns, "delete", "cronjob", "hello")
		}
	})

	step("drain retries evictions a budget refuses; an eviction goes through once the budget has room", func(t *testing.T) {
		apply(t, c.kubectlReal, "web", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: minik8s/busybox
        command: ["sleep", "3600"]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
`)
		budget := func(allowed int32) {
			t.Helper()
			pollUntil(t, "pdb web", fmt.Sprintf("allowing %d", allowed), func() (*policyv1.PodDisruptionBudget, error) {
				return pdbs.Get(t.Context(), c.ns, "web", metav1.GetOptions{})
			}, func(p *policyv1.PodDisruptionBudget) bool {
				return p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 2+allowed && p.Status.DisruptionsAllowed == allowed
			}, nil, c.kubeletTails)
		}
		budget(0)
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			r := k.run(t, "drain", node, "--ignore-daemonsets", "--force", "--grace-period", "1", "--timeout", "12s")
			if r.err == nil || !strings.Contains(r.stderr, "Cannot evict pod as it would violate the pod's disruption budget.") ||
				!strings.Contains(r.stderr, "will retry after 5s") {
				t.Errorf("%s kubectl drain under a holding budget:\n%s", k.name, r)
			}
			k.ok(t, "uncordon", node)
		}
		d, err := deploys.Get(t.Context(), c.ns, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		three := int32(3)
		d.Spec.Replicas = &three
		if _, err := deploys.Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		budget(1)
		pods, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("web pods: %v", err)
		}
		res, err := scheme.Lookup("pods")
		if err != nil {
			t.Fatal(err)
		}
		ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
			ObjectMeta: metav1.ObjectMeta{Name: pods.Items[0].Name, Namespace: c.ns}}
		if _, err := c.cl.Post().Resource(res, c.ns, ev.Name, "eviction").Body(ev).Do(t.Context()); err != nil {
			t.Fatalf("eviction with a disruption to spare: %v", err)
		}
	})
}
