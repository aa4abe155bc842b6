package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/controller/internal/deployment"
	"minik8s.io/shared/client"
	"minik8s.io/shared/podstatus"
)

// fakeKubelets plays scheduler and kubelets for the pods of namespace ns until ctx ends: binds
// new pods, reports them running and ready, and finishes deletions. It counts the most pods
// ever alive at once (created, not terminating) in peak.
func fakeKubelets(ctx context.Context, admin *client.Client, ns string, peak *atomic.Int32) {
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	zero := int64(0)
	for ctx.Err() == nil {
		list, err := pods.List(ctx, ns, metav1.ListOptions{})
		if err == nil {
			var alive int32
			for _, p := range list.Items {
				switch {
				case p.DeletionTimestamp != nil:
					_ = pods.Delete(ctx, ns, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					continue
				case p.Spec.NodeName == "":
					_, _ = admin.Post().Resource(pods.Resource(), ns, p.Name, "binding").Body(&corev1.Binding{
						TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Name: p.Name},
						Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
					}).Do(ctx)
				case !podstatus.Ready(&p):
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
					_, _ = pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{})
				}
				alive++
			}
			for {
				old := peak.Load()
				if alive <= old || peak.CompareAndSwap(old, alive) {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestDeployment runs the Deployment and ReplicaSet controllers against a real apiserver and
// RabbitMQ with pods made ready by hand: a first rollout, an update that keeps within the
// surge, a rollback that reuses the old ReplicaSet with its history, scaling through the
// scale subresource, pause and resume, and the history limit.
func TestDeployment(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	ds := client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](admin)
	rss := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-deployment",
		Controllers:            []string{"deployment", "replicaset"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	var peak atomic.Int32
	kctx, kcancel := context.WithCancel(t.Context())
	defer kcancel()
	go fakeKubelets(kctx, admin, ns, &peak)

	three, one, limit := int32(3), intstr.FromInt32(1), int32(2)
	zero := intstr.FromInt32(0)
	d, err := ds.Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &three,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0",
					Env: []corev1.EnvVar{{Name: "VERSION", Value: "a"}}}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}},
			RevisionHistoryLimit: &limit,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	version := func(rs *appsv1.ReplicaSet) string { return rs.Spec.Template.Spec.Containers[0].Env[0].Value }
	// owned lists d's ReplicaSets by version.
	owned := func(ctx context.Context) (map[string]*appsv1.ReplicaSet, error) {
		list, err := rss.List(ctx, ns, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]*appsv1.ReplicaSet{}
		for i := range list.Items {
			rs := &list.Items[i]
			if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID {
				out[version(rs)] = rs
			}
		}
		return out, nil
	}
	// waitRolledOut waits until the Deployment runs replicas pods of version v, all available,
	// at revision rev, with v's ReplicaSet the only one with pods.
	waitRolledOut := func(t *testing.T, v string, replicas int32, rev string) map[string]*appsv1.ReplicaSet {
		t.Helper()
		var got map[string]*appsv1.ReplicaSet
		waitUntil(t, fmt.Sprintf("version %s rolled out at revision %s", v, rev), func(ctx context.Context) (bool, error) {
			cur, err := ds.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := cur.Status
			var progressing *appsv1.DeploymentCondition
			for i := range st.Conditions {
				if st.Conditions[i].Type == appsv1.DeploymentProgressing {
					progressing = &st.Conditions[i]
				}
			}
			if st.ObservedGeneration != cur.Generation || st.Replicas != replicas || st.UpdatedReplicas != replicas ||
				st.AvailableReplicas != replicas || progressing == nil || progressing.Reason != deployment.ReasonNewRSAvailable ||
				cur.Annotations[deployment.RevisionAnnotation] != rev {
				return false, fmt.Errorf("status %+v, revision %q", st, cur.Annotations[deployment.RevisionAnnotation])
			}
			got, err = owned(ctx)
			if err != nil {
				return false, err
			}
			for ver, rs := range got {
				if (ver == v) != (*rs.Spec.Replicas > 0) {
					return false, fmt.Errorf("version %s has %d replicas", ver, *rs.Spec.Replicas)
				}
			}
			return got[v] != nil && got[v].Annotations[deployment.RevisionAnnotation] == rev, nil
		})
		return got
	}
	setVersion := func(t *testing.T, v string) {
		t.Helper()
		patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"c","env":[{"name":"VERSION","value":%q}]}]}}}}`, v)
		if _, err := ds.Patch(t.Context(), ns, "web", types.StrategicMergePatchType, patch); err != nil {
			t.Fatalf("set version %s: %v", v, err)
		}
	}

	t.Run("first rollout", func(t *testing.T) {
		got := waitRolledOut(t, "a", 3, "1")
		rs := got["a"]
		hash := rs.Labels[deployment.HashLabel]
		if hash == "" || rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels[deployment.HashLabel] != hash || rs.Spec.Template.Labels[deployment.HashLabel] != hash {
			t.Errorf("ReplicaSet %s: labels %v selector %v", rs.Name, rs.Labels, rs.Spec.Selector)
		}
		if want := deployment.TemplateHash(&d.Spec.Template, nil); hash != want {
			t.Errorf("pod-template-hash %s, want %s", hash, want)
		}
	})
	t.Run("rolling update within the surge", func(t *testing.T) {
		peak.Store(0)
		setVersion(t, "b")
		got := waitRolledOut(t, "b", 3, "2")
		if p := peak.Load(); p > 4 {
			t.Errorf("%d pods alive at once, more than replicas + maxSurge = 4", p)
		}
		if len(got) != 2 {
			t.Errorf("%d ReplicaSets, want the two versions", len(got))
		}
	})
	t.Run("rollback reuses the old ReplicaSet", func(t *testing.T) {
		before, _ := owned(t.Context())
		setVersion(t, "a")
		got := waitRolledOut(t, "a", 3, "3")
		if got["a"].UID != before["a"].UID {
			t.Errorf("a new ReplicaSet for a template that had one")
		}
		if h := got["a"].Annotations[deployment.RevisionHistoryAnnotation]; h != "1" {
			t.Errorf("revision-history %q, want 1", h)
		}
	})
	t.Run("scale subresource", func(t *testing.T) {
		_, err := admin.Put().Resource(ds.Resource(), ns, "web", "scale").Body(&autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5},
		}).Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		waitRolledOut(t, "a", 5, "3")
	})
	t.Run("paused holds a new template until resumed", func(t *testing.T) {
		if _, err := ds.Patch(t.Context(), ns, "web", types.MergePatchType, []byte(`{"spec":{"paused":true}}`)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "Progressing Unknown DeploymentPaused", func(ctx context.Context) (bool, error) {
			cur, err := ds.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range cur.Status.Conditions {
				if c.Type == appsv1.DeploymentProgressing {
					return c.Status == corev1.ConditionUnknown && c.Reason == deployment.ReasonPaused, nil
				}
			}
			return false, nil
		})
		setVersion(t, "c")
		time.Sleep(2 * time.Second)
		if got, _ := owned(t.Context()); got["c"] != nil {
			t.Fatal("a paused Deployment made a ReplicaSet for its new template")
		}
		if _, err := ds.Patch(t.Context(), ns, "web", types.MergePatchType, []byte(`{"spec":{"paused":false}}`)); err != nil {
			t.Fatal(err)
		}
		got := waitRolledOut(t, "c", 5, "4")
		// History limit 2: a (revision 3) and b (revision 2) are old; both kept.
		if len(got) != 3 {
			t.Errorf("%d ReplicaSets, want c and two old ones", len(got))
		}
	})
	t.Run("history limit", func(t *testing.T) {
		setVersion(t, "d")
		waitRolledOut(t, "d", 5, "5")
		waitUntil(t, "the oldest ReplicaSet (b) deleted", func(ctx context.Context) (bool, error) {
			got, err := owned(ctx)
			return len(got) == 3 && got["b"] == nil, err
		})
	})
}
