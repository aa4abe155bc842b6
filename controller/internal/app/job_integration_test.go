package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestJobs runs the Job, TTL-after-finished and garbage collector controllers against a real
// apiserver and RabbitMQ, and plays the kubelet by setting pod phases by hand.
func TestJobs(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	jobs := client.MustFor[*batchv1.Job, *batchv1.JobList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-jobs",
		Controllers:            []string{"job", "ttl-after-finished", "garbagecollector"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	ctx := t.Context()
	create := func(name string, completions, parallelism, backoff int32, mode batchv1.CompletionMode) *batchv1.Job {
		t.Helper()
		j, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: batchv1.JobSpec{
			Completions: &completions, Parallelism: &parallelism, BackoffLimit: &backoff, CompletionMode: &mode,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "minik8s/busybox"}}}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create job %s: %v", name, err)
		}
		return j
	}
	podsOf := func(ctx context.Context, j *batchv1.Job) ([]corev1.Pod, error) {
		l, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/controller-uid=" + string(j.UID)})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	running := func(list []corev1.Pod) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range list {
			if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning {
				out = append(out, p)
			}
		}
		return out
	}
	finish := func(p corev1.Pod, phase corev1.PodPhase) {
		t.Helper()
		p.Status.Phase = phase
		if _, err := pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
	}
	jobStatus := func(name string, cond func(*batchv1.Job) bool) *batchv1.Job {
		t.Helper()
		var got *batchv1.Job
		waitUntil(t, "job "+name+" status", func(ctx context.Context) (bool, error) {
			j, err := jobs.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got = j
			return cond(j), fmt.Errorf("status %+v", j.Status)
		})
		return got
	}
	hasCondition := func(j *batchv1.Job, typ batchv1.JobConditionType, reason string) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == typ && c.Status == corev1.ConditionTrue && c.Reason == reason {
				return true
			}
		}
		return false
	}

	t.Run("completions 3, parallelism 2", func(t *testing.T) {
		j := create("three", 3, 2, 6, batchv1.NonIndexedCompletion)
		for done := 0; done < 3; {
			var active []corev1.Pod
			waitUntil(t, "active pods", func(ctx context.Context) (bool, error) {
				all, err := podsOf(ctx, j)
				active = running(all)
				if len(active) > 2 {
					t.Fatalf("%d active pods, parallelism is 2", len(active))
				}
				return len(active) == min(2, 3-done), err
			})
			finish(active[0], corev1.PodSucceeded)
			done++
		}
		got := jobStatus("three", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, "CompletionsReached") })
		if got.Status.Succeeded != 3 || got.Status.CompletionTime == nil || got.Status.StartTime == nil || got.Status.Active != 0 {
			t.Fatalf("complete job status %+v", got.Status)
		}
		all, _ := podsOf(ctx, j)
		if len(all) != 3 {
			t.Fatalf("%d pods made for 3 completions", len(all))
		}
	})

	t.Run("backoff limit", func(t *testing.T) {
		j := create("fails", 1, 1, 0, batchv1.NonIndexedCompletion)
		var first []corev1.Pod
		waitUntil(t, "a pod", func(ctx context.Context) (bool, error) {
			all, err := podsOf(ctx, j)
			first = running(all)
			return len(first) == 1, err
		})
		finish(first[0], corev1.PodFailed)
		got := jobStatus("fails", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobFailed, "BackoffLimitExceeded") })
		if got.Status.Failed != 1 || got.Status.CompletionTime != nil {
			t.Fatalf("failed job status %+v", got.Status)
		}
	})

	t.Run("indexed", func(t *testing.T) {
		j := create("idx", 2, 2, 6, batchv1.IndexedCompletion)
		var active []corev1.Pod
		waitUntil(t, "two indexed pods", func(ctx context.Context) (bool, error) {
			all, err := podsOf(ctx, j)
			active = running(all)
			return len(active) == 2, err
		})
		seen := map[string]bool{}
		for _, p := range active {
			seen[p.Annotations[batchv1.JobCompletionIndexAnnotation]] = true
			if p.Labels[batchv1.JobCompletionIndexAnnotation] == "" || p.Spec.Containers[0].Env[0].Name != "JOB_COMPLETION_INDEX" {
				t.Errorf("pod %s labels %v env %v", p.Name, p.Labels, p.Spec.Containers[0].Env)
			}
			finish(p, corev1.PodSucceeded)
		}
		if !seen["0"] || !seen["1"] {
			t.Fatalf("indexes %v, want 0 and 1", seen)
		}
		got := jobStatus("idx", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, "CompletionsReached") })
		if got.Status.CompletedIndexes != "0-1" {
			t.Fatalf("completedIndexes %q", got.Status.CompletedIndexes)
		}
	})

	t.Run("ttl after finished deletes the job and its pods", func(t *testing.T) {
		j := create("ttl", 1, 1, 6, batchv1.NonIndexedCompletion)
		var active []corev1.Pod
		waitUntil(t, "a pod", func(ctx context.Context) (bool, error) {
			all, err := podsOf(ctx, j)
			active = running(all)
			return len(active) == 1, err
		})
		// The job controller writes the job's status meanwhile: a Conflict means read again.
		waitUntil(t, "ttlSecondsAfterFinished set", func(ctx context.Context) (bool, error) {
			cur, err := jobs.Get(ctx, ns, "ttl", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			zero := int32(0)
			cur.Spec.TTLSecondsAfterFinished = &zero
			_, err = jobs.Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil, err
		})
		finish(active[0], corev1.PodSucceeded)
		waitUntil(t, "the job and its pod gone", func(ctx context.Context) (bool, error) {
			_, err := jobs.Get(ctx, ns, "ttl", metav1.GetOptions{})
			if !errors.Is(err, apierror.ErrNotFound) {
				return false, err
			}
			all, err := podsOf(ctx, j)
			return len(all) == 0, err
		})
	})
}
