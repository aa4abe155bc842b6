package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/shared/client"
)

// TestReplicaSet runs the ReplicaSet controller against a real apiserver and RabbitMQ and
// plays the scheduler and kubelet by hand (bindings, status): pods made and owned, a deleted
// pod replaced, readiness counted, the scale subresource both ways with the unscheduled pods
// removed first, a relabelled pod released and replaced, and adopted again when its labels
// come back.
func TestReplicaSet(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	rss := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-replicaset",
		Controllers:            []string{"replicaset"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	t.Cleanup(func() {
		zero := int64(0)
		list, _ := pods.List(context.Background(), ns, metav1.ListOptions{LabelSelector: "app=web"})
		for _, p := range list.Items {
			_ = pods.Delete(context.Background(), ns, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})

	three := int32(3)
	rs, err := rss.Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &three,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicaset: %v", err)
	}

	// active lists the live pods the ReplicaSet controls, by name.
	active := func(ctx context.Context) ([]corev1.Pod, error) {
		list, err := pods.List(ctx, ns, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && ref.UID == rs.UID && replicaset.Active(&p) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	names := func(ps []corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	waitActive := func(t *testing.T, what string, n int) []corev1.Pod {
		t.Helper()
		var got []corev1.Pod
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			ps, err := active(ctx)
			got = ps
			return len(ps) == n, err
		})
		// No more than n come later either: expectations hold extra creations back.
		time.Sleep(time.Second)
		if ps, err := active(t.Context()); err != nil || len(ps) != n {
			t.Fatalf("%s: %d active pods a second later, want %d (%v)", what, len(ps), n, err)
		}
		return got
	}
	// runReady plays scheduler and kubelet: binds the pod to a node, reports it running and
	// ready.
	runReady := func(t *testing.T, p corev1.Pod) {
		t.Helper()
		_, err := admin.Post().Resource(pods.Resource(), ns, p.Name, "binding").Body(&corev1.Binding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}).Do(t.Context())
		if err != nil {
			t.Fatalf("bind %s: %v", p.Name, err)
		}
		cur, err := pods.Get(t.Context(), ns, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.Phase = corev1.PodRunning
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err := pods.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s: %v", p.Name, err)
		}
	}
	waitStatus := func(t *testing.T, what string, ok func(st appsv1.ReplicaSetStatus) bool) {
		t.Helper()
		var last appsv1.ReplicaSetStatus
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			cur, err := rss.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = cur.Status
			return ok(cur.Status), fmt.Errorf("status %+v", last)
		})
	}
	scale := func(t *testing.T, n int32) {
		t.Helper()
		_, err := admin.Put().Resource(rss.Resource(), ns, "web", "scale").Body(&autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n},
		}).Do(t.Context())
		if err != nil {
			t.Fatalf("scale to %d: %v", n, err)
		}
	}

	var originals []corev1.Pod
	t.Run("creates and owns", func(t *testing.T) {
		originals = waitActive(t, "three pods", 3)
		for _, p := range originals {
			ref := metav1.GetControllerOfNoCopy(&p)
			if ref.Kind != "ReplicaSet" || ref.Name != "web" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("pod %s: controller reference %+v", p.Name, ref)
			}
			if p.GenerateName != "web-" {
				t.Errorf("pod %s: generateName %q", p.Name, p.GenerateName)
			}
		}
		waitStatus(t, "status.replicas 3", func(st appsv1.ReplicaSetStatus) bool {
			return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ObservedGeneration == 1
		})
		for _, p := range originals {
			runReady(t, p)
		}
		waitStatus(t, "3 ready and available", func(st appsv1.ReplicaSetStatus) bool {
			return st.ReadyReplicas == 3 && st.AvailableReplicas == 3
		})
	})

	var survivors []string
	t.Run("replaces a deleted pod", func(t *testing.T) {
		gone := originals[0].Name
		if err := pods.Delete(t.Context(), ns, gone, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		now := waitActive(t, "a replacement", 3)
		if slices.Contains(names(now), gone) {
			t.Fatalf("the deleted pod %s still counts: %v", gone, names(now))
		}
		survivors = names(originals[1:])
	})

	t.Run("scale subresource up and down, unscheduled pods first", func(t *testing.T) {
		scale(t, 5)
		waitActive(t, "five pods", 5)
		waitStatus(t, "spec and status at 5", func(st appsv1.ReplicaSetStatus) bool { return st.Replicas == 5 && st.ObservedGeneration == 2 })
		scale(t, 2)
		left := waitActive(t, "two pods", 2)
		if got := names(left); !slices.Equal(got, survivors) {
			t.Errorf("kept %v, want the bound, ready %v", got, survivors)
		}
	})

	t.Run("releases a pod whose labels stop matching, adopts it back", func(t *testing.T) {
		name := survivors[0]
		relabel := func(app string) {
			t.Helper()
			if _, err := pods.Patch(t.Context(), ns, name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"app":%q}}}`, app)); err != nil {
				t.Fatal(err)
			}
		}
		relabel("other")
		waitUntil(t, "the pod released", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, ns, name, metav1.GetOptions{})
			return err == nil && metav1.GetControllerOfNoCopy(p) == nil, err
		})
		withReplacement := waitActive(t, "a replacement for the released pod", 2)
		relabel("web")
		waitUntil(t, "the pod adopted again", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ref := metav1.GetControllerOfNoCopy(p)
			return ref != nil && ref.UID == rs.UID, nil
		})
		left := waitActive(t, "back to two", 2)
		if got := names(left); !slices.Equal(got, survivors) {
			t.Errorf("kept %v after adopting %s back (had %v), want the bound, ready %v", got, name, names(withReplacement), survivors)
		}
	})
}
