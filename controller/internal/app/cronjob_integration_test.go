package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// TestCronJobAndDisruption runs the cronjob, job, replicaset and disruption controllers
// against a real apiserver and RabbitMQ: a CronJob every minute makes its first Job and
// records it, and a PodDisruptionBudget refuses an eviction until its ReplicaSet grows.
func TestCronJobAndDisruption(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-cron",
		Controllers:            []string{"cronjob", "job", "replicaset", "disruption"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	ctx := t.Context()

	// The CronJob's first Job, named after its minute, and the status that records it.
	cronJobs := client.MustFor[*batchv1.CronJob, *batchv1.CronJobList](admin)
	jobs := client.MustFor[*batchv1.Job, *batchv1.JobList](admin)
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}, Spec: batchv1.CronJobSpec{
		Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers:    []corev1.Container{{Name: "hello", Image: "minik8s/busybox", Command: []string{"sh", "-c", "date; echo Hello"}}},
		}}}},
	}}
	cj, err := cronJobs.Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cronjob: %v", err)
	}
	var got *batchv1.CronJob
	waitUntil(t, "the cronjob's first job in its status", func(ctx context.Context) (bool, error) {
		c, err := cronJobs.Get(ctx, ns, "hello", metav1.GetOptions{})
		got = c
		return err == nil && len(c.Status.Active) == 1 && c.Status.LastScheduleTime != nil, err
	})
	ref := got.Status.Active[0]
	want := "hello-" + itoa(got.Status.LastScheduleTime.Unix()/60)
	if ref.Name != want {
		t.Fatalf("job %s, want %s", ref.Name, want)
	}
	job, err := jobs.Get(ctx, ns, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get job: %v", err)
	}
	if job.Annotations[batchv1.CronJobScheduledTimestampAnnotation] == "" || len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != cj.UID {
		t.Fatalf("job metadata: %+v", job.ObjectMeta)
	}

	// A budget of two on a ReplicaSet of two: nothing may go until a third pod is ready.
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	rsets := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](admin)
	pdbs := client.MustFor[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](admin)
	labels := map[string]string{"app": "web"}
	two, three := int32(2), int32(3)
	rs, err := rsets.Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "minik8s/busybox"}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicaset: %v", err)
	}
	minAvailable := intstr.FromInt32(2)
	if _, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}
	// Play the kubelet: every pod of the ReplicaSet runs and is ready.
	readyAll := func(n int) []corev1.Pod {
		t.Helper()
		var list []corev1.Pod
		waitUntil(t, "the replicaset's pods ready", func(ctx context.Context) (bool, error) {
			l, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err
			}
			ready := 0
			for i := range l.Items {
				p := &l.Items[i]
				if p.Status.Phase != corev1.PodRunning {
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !errors.Is(err, apierror.ErrConflict) {
						return false, err
					}
					continue
				}
				ready++
			}
			list = l.Items
			return ready == n && len(l.Items) == n, nil
		})
		return list
	}
	budget := func(allowed int32) {
		t.Helper()
		waitUntil(t, "the budget's status", func(ctx context.Context) (bool, error) {
			p, err := pdbs.Get(ctx, ns, "web", metav1.GetOptions{})
			return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.DisruptionsAllowed == allowed &&
				p.Status.CurrentHealthy == allowed+2, err
		})
	}
	podRes, err := scheme.Lookup("pods")
	if err != nil {
		t.Fatal(err)
	}
	evict := func(name string) error {
		ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		_, err := admin.Post().Resource(podRes, ns, name, "eviction").Body(ev).Do(ctx)
		return err
	}
	list := readyAll(2)
	budget(0)
	if err := evict(list[0].Name); !errors.Is(err, apierror.ErrTooManyRequests) {
		t.Fatalf("eviction under a holding budget: %v, want 429", err)
	}
	rs, err = rsets.Get(ctx, ns, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs.Spec.Replicas = &three
	if _, err := rsets.Update(ctx, rs, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale up: %v", err)
	}
	readyAll(3)
	budget(1)
	if err := evict(list[0].Name); err != nil {
		t.Fatalf("eviction with a disruption to spare: %v", err)
	}

	// A maxUnavailable budget over a StatefulSet's pods expects its scale (3), not the two
	// pods there are: with two healthy, none may go.
	sets := client.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](admin)
	dbLabels := map[string]string{"app": "db"}
	set, err := sets.Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: dbLabels}, ServiceName: "db",
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dbLabels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "db", Image: "minik8s/busybox"}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	for i := range 2 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-" + itoa(int64(i)), Labels: dbLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "minik8s/busybox"}}}}
		p, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod status: %v", err)
		}
	}
	maxUnavailable := intstr.FromInt32(1)
	if _, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: dbLabels}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}
	var st policyv1.PodDisruptionBudgetStatus
	waitUntil(t, "the statefulset budget's status", func(ctx context.Context) (bool, error) {
		p, err := pdbs.Get(ctx, ns, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		return p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 2, nil
	})
	if st.ExpectedPods != 3 || st.DesiredHealthy != 2 || st.DisruptionsAllowed != 0 {
		t.Fatalf("statefulset budget: expected %d desired %d allowed %d, want 3, 2, 0", st.ExpectedPods, st.DesiredHealthy, st.DisruptionsAllowed)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
