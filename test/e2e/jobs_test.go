package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestJobsAndGarbageCollection runs Jobs and cascading deletes on a one-node cluster made by
// the scripts (apiserver, scheduler, controller-manager, a kubelet on Docker): the upstream pi
// Job through the real kubectl, parallelism and completions, a Job failing up to its
// backoffLimit, and a ReplicaSet's pods deleted in the background, orphaned, or before their
// owner in the foreground.
func TestJobsAndGarbageCollection(t *testing.T) {
	c := startNetCluster(t, "j")
	c.startControlPlane(t, nil, nil)
	jobs := client.MustFor[*batchv1.Job, *batchv1.JobList](c.cl)
	rss := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.cl)
	dir := t.TempDir()
	apply := func(t *testing.T, k kubectl, name, body string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		k.ok(t, "-n", c.ns, "apply", "-f", path)
	}
	waitJob := func(t *testing.T, name, what string, cond func(*batchv1.Job) bool) *batchv1.Job {
		t.Helper()
		return pollUntil(t, "job "+name, what, func() (*batchv1.Job, error) {
			return jobs.Get(t.Context(), c.ns, name, metav1.GetOptions{})
		}, cond, nil, c.kubeletTails)
	}
	podsOf := func(t *testing.T, selector string) []corev1.Pod {
		t.Helper()
		l, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	condition := func(j *batchv1.Job, typ batchv1.JobConditionType, reason string) bool {
		for _, cond := range j.Status.Conditions {
			if cond.Type == typ && cond.Status == corev1.ConditionTrue && cond.Reason == reason {
				return true
			}
		}
		return false
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("the upstream pi Job applies with the real kubectl, completes, and both kubectls show it", func(t *testing.T) {
		// kubernetes.io's example, the image swapped for a local one (and the command for one
		// that image has).
		apply(t, c.kubectlReal, "pi", `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: minik8s/busybox
        command: ["sh", "-c", "echo 3.14159"]
      restartPolicy: Never
  backoffLimit: 4
`)
		j := waitJob(t, "pi", "Complete", func(j *batchv1.Job) bool { return condition(j, batchv1.JobComplete, "CompletionsReached") })
		if j.Status.Succeeded != 1 || j.Status.StartTime == nil || j.Status.CompletionTime == nil {
			t.Fatalf("pi status %s", dump(j.Status))
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			if out := k.ok(t, "-n", c.ns, "logs", "job/pi").stdout; out != "3.14159\n" {
				t.Errorf("%s kubectl logs job/pi: %q", k.name, out)
			}
			out := k.ok(t, "-n", c.ns, "get", "jobs").stdout
			if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(header, []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"}) {
				t.Errorf("%s kubectl get jobs header %v", k.name, header)
			}
			if row := rowOf(out, "pi"); len(row) < 3 || row[1] != "Complete" || row[2] != "1/1" {
				t.Errorf("%s kubectl get jobs:\n%s", k.name, out)
			}
		}
	})

	step("completions 3, parallelism 2: never more than 2 pods at once", func(t *testing.T) {
		apply(t, c.kubectl, "three", `apiVersion: batch/v1
kind: Job
metadata:
  name: three
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      containers:
      - name: work
        image: minik8s/busybox
        command: ["sh", "-c", "sleep 2"]
      restartPolicy: Never
`)
		j := waitJob(t, "three", "Complete", func(j *batchv1.Job) bool {
			if j.Status.Active > 2 {
				t.Fatalf("%d active pods, parallelism 2", j.Status.Active)
			}
			return condition(j, batchv1.JobComplete, "CompletionsReached")
		})
		pods := podsOf(t, "batch.kubernetes.io/job-name=three")
		if j.Status.Succeeded != 3 || len(pods) != 3 {
			t.Fatalf("succeeded %d with %d pods, want 3 and 3", j.Status.Succeeded, len(pods))
		}
		// The containers' own start and finish times: at no moment did three run.
		type span struct{ from, to time.Time }
		var spans []span
		for _, p := range pods {
			s, ok := containerStatus(&p, "work")
			if !ok || s.State.Terminated == nil || p.Labels["job-name"] != "three" || metav1.GetControllerOf(&p) == nil {
				t.Fatalf("pod %s: status %s labels %v owners %v", p.Name, dump(p.Status), p.Labels, p.OwnerReferences)
			}
			spans = append(spans, span{s.State.Terminated.StartedAt.Time, s.State.Terminated.FinishedAt.Time})
		}
		for _, a := range spans {
			overlapping := 0
			for _, b := range spans {
				if !b.from.After(a.from) && b.to.After(a.from) {
					overlapping++
				}
			}
			if overlapping > 2 {
				t.Errorf("%d containers ran at %s: %v", overlapping, a.from, spans)
			}
		}
	})

	step("a failing Job stops at its backoffLimit after a back-off", func(t *testing.T) {
		apply(t, c.kubectlReal, "fails", `apiVersion: batch/v1
kind: Job
metadata:
  name: fails
spec:
  backoffLimit: 1
  template:
    spec:
      containers:
      - name: fail
        image: minik8s/busybox
        command: ["sh", "-c", "exit 3"]
      restartPolicy: Never
`)
		j := waitJob(t, "fails", "Failed", func(j *batchv1.Job) bool { return condition(j, batchv1.JobFailed, "BackoffLimitExceeded") })
		pods := podsOf(t, "batch.kubernetes.io/job-name=fails")
		if j.Status.Failed != 2 || len(pods) != 2 || j.Status.Active != 0 || j.Status.CompletionTime != nil {
			t.Fatalf("failed %d active %d with %d pods; status %s", j.Status.Failed, j.Status.Active, len(pods), dump(j.Status))
		}
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		first, ok := containerStatus(&pods[0], "fail")
		if !ok || first.State.Terminated == nil {
			t.Fatalf("first pod %s", dump(pods[0].Status))
		}
		// The second pod waited out the 10 s back-off (timestamps are whole seconds).
		if gap := pods[1].CreationTimestamp.Sub(first.State.Terminated.FinishedAt.Time); gap < 9*time.Second {
			t.Errorf("second pod made %s after the first failed, want the 10 s back-off", gap)
		}
	})

	// A ReplicaSet whose pods ignore SIGTERM (sleep as PID 1) and so take their full grace
	// period to go: a foreground deletion has to wait for them.
	rs := func(name string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: %[1]s
spec:
  replicas: 2
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      terminationGracePeriodSeconds: 6
      containers:
      - name: sleep
        image: minik8s/busybox
        command: ["sleep", "3600"]
`, name)
	}
	ownedPods := func(t *testing.T, name string, n int) []corev1.Pod {
		t.Helper()
		var pods []corev1.Pod
		pollUntil(t, "replicaset "+name, fmt.Sprintf("owning %d running pods", n), func() ([]corev1.Pod, error) {
			pods = podsOf(t, "app="+name)
			return pods, nil
		}, func(ps []corev1.Pod) bool {
			running := 0
			for i := range ps {
				if ps[i].Status.Phase == corev1.PodRunning && metav1.GetControllerOf(&ps[i]) != nil {
					running++
				}
			}
			return running == n
		}, nil, c.kubeletTails)
		return pods
	}
	rsGone := func(t *testing.T, name string) {
		t.Helper()
		pollUntil(t, "replicaset "+name, "gone", func() (error, error) {
			_, err := rss.Get(t.Context(), c.ns, name, metav1.GetOptions{})
			return err, nil
		}, func(err error) bool { return errors.Is(err, apierror.ErrNotFound) }, nil, c.kubeletTails)
	}

	step("kubectl delete removes a ReplicaSet's pods in the background", func(t *testing.T) {
		apply(t, c.kubectlReal, "web-bg", rs("web-bg"))
		ownedPods(t, "web-bg", 2)
		c.kubectlReal.ok(t, "-n", c.ns, "delete", "replicaset", "web-bg", "--wait=false")
		pollUntil(t, "pods of web-bg", "gone", func() (int, error) { return len(podsOf(t, "app=web-bg")), nil },
			func(n int) bool { return n == 0 }, nil, c.kubeletTails)
		rsGone(t, "web-bg")
	})

	step("--cascade=orphan keeps the pods without their owner reference", func(t *testing.T) {
		apply(t, c.kubectl, "web-or", rs("web-or"))
		before := ownedPods(t, "web-or", 2)
		c.kubectl.ok(t, "-n", c.ns, "delete", "rs", "web-or", "--cascade=orphan")
		rsGone(t, "web-or")
		after := podsOf(t, "app=web-or")
		if len(after) != len(before) {
			t.Fatalf("%d pods after the orphaning delete, %d before", len(after), len(before))
		}
		for _, p := range after {
			if len(p.OwnerReferences) != 0 || p.DeletionTimestamp != nil {
				t.Errorf("orphan %s: owners %v deletionTimestamp %v", p.Name, p.OwnerReferences, p.DeletionTimestamp)
			}
		}
		c.kubectl.ok(t, "-n", c.ns, "delete", "pods", "-l", "app=web-or", "--grace-period=0", "--wait=false")
	})

	step("--cascade=foreground keeps the owner until its pods are gone", func(t *testing.T) {
		apply(t, c.kubectlReal, "web-fg", rs("web-fg"))
		ownedPods(t, "web-fg", 2)
		c.kubectlReal.ok(t, "-n", c.ns, "delete", "rs", "web-fg", "--cascade=foreground", "--wait=false")
		owner, err := rss.Get(t.Context(), c.ns, "web-fg", metav1.GetOptions{})
		if err != nil || owner.DeletionTimestamp == nil || !slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner right after the delete: %v %+v", err, owner)
		}
		// The owner is read before the pods: once it is gone, no pod of it may be left.
		sawTerminating := false
		pollUntil(t, "replicaset web-fg", "gone after its pods", func() (bool, error) {
			_, err := rss.Get(t.Context(), c.ns, "web-fg", metav1.GetOptions{})
			pods := podsOf(t, "app=web-fg")
			for _, p := range pods {
				sawTerminating = sawTerminating || p.DeletionTimestamp != nil
			}
			if errors.Is(err, apierror.ErrNotFound) && len(pods) > 0 {
				t.Fatalf("owner gone while %d of its pods remain", len(pods))
			}
			return errors.Is(err, apierror.ErrNotFound), nil
		}, func(gone bool) bool { return gone }, nil, c.kubeletTails)
		if !sawTerminating {
			t.Errorf("never saw a pod of web-fg terminating while its owner waited")
		}
	})
}
