package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// TestCronJobAndDrain runs on a one-node cluster made by the scripts: Kubernetes docs' hello
// CronJob (every minute, Forbid) makes its first Job, shown by both kubectls and run by hand
// with create job --from; and a PodDisruptionBudget over a Deployment makes drain retry its
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

	step("the hello CronJob makes its first Job, and create job --from runs it by hand", func(t *testing.T) {
		apply(t, c.kubectlReal, "hello", `apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: hello
            image: minik8s/busybox
            imagePullPolicy: IfNotPresent
            command:
            - /bin/sh
            - -c
            - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
`)
		cj := pollUntil(t, "cronjob hello", "scheduled", func() (*batchv1.CronJob, error) {
			return cronJobs.Get(t.Context(), c.ns, "hello", metav1.GetOptions{})
		}, func(cj *batchv1.CronJob) bool { return cj.Status.LastScheduleTime != nil }, nil, c.kubeletTails)
		l, err := jobs.List(t.Context(), c.ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || !strings.HasPrefix(l.Items[0].Name, "hello-") ||
			l.Items[0].Annotations[batchv1.CronJobScheduledTimestampAnnotation] == "" {
			t.Fatalf("jobs after the first schedule: %s", dump(l.Items))
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "-n", c.ns, "get", "cronjobs").stdout
			if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(header,
				[]string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"}) {
				t.Errorf("%s kubectl get cronjobs header %v", k.name, header)
			}
			if row := rowOf(out, "hello"); len(row) < 4 || row[1] != "*" || row[len(row)-4] != "False" {
				t.Errorf("%s kubectl get cronjobs:\n%s", k.name, out)
			}
			name := "hello-by-" + k.name
			k.ok(t, "-n", c.ns, "create", "job", name, "--from=cronjob/hello")
			j, err := jobs.Get(t.Context(), c.ns, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s kubectl create job --from: %v", k.name, err)
			}
			if j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].UID != cj.UID {
				t.Errorf("%s kubectl create job --from made %s", k.name, dump(j.ObjectMeta))
			}
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
