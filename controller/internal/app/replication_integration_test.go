package app

import (
	"context"
	"fmt"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/shared/client"
)

// TestReplicationController runs the replication controller and the garbage collector,
// under the controller-manager's own identity, against a real apiserver and RabbitMQ, playing
// scheduler and kubelet by hand: an orphan that matches is adopted and the rest made, owned by
// the ReplicationController; the status counts them (ready, available, fully labelled,
// observed generation); the scale subresource moves them; deleting the ReplicationController
// takes its pods.
func TestReplicationController(t *testing.T) {
	_, admin := runControllers(t, "replicationcontroller", "garbagecollector")
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	rcs := client.MustFor[*corev1.ReplicationController, *corev1.ReplicationControllerList](admin)
	const ns = "default"

	orphan, err := pods.Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "rc-web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	rc, err := rcs.Create(t.Context(), &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &three,
			Selector: map[string]string{"app": "rc-web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rc-web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicationcontroller: %v", err)
	}

	owned := func(ctx context.Context) ([]corev1.Pod, error) {
		list, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: "app=rc-web"})
		if err != nil {
			return nil, err
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && ref.UID == rc.UID && ref.Kind == "ReplicationController" && replicaset.Active(&p) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	waitOwned := func(t *testing.T, n int) []corev1.Pod {
		t.Helper()
		var got []corev1.Pod
		waitUntil(t, fmt.Sprintf("%d pods of the ReplicationController", n), func(ctx context.Context) (bool, error) {
			ps, err := owned(ctx)
			got = ps
			return len(ps) == n, err
		})
		return got
	}
	waitStatus := func(t *testing.T, what string, ok func(st corev1.ReplicationControllerStatus) bool) {
		t.Helper()
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			cur, err := rcs.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return ok(cur.Status), fmt.Errorf("status %+v", cur.Status)
		})
	}

	t.Run("adopts the orphan and makes the rest", func(t *testing.T) {
		got := waitOwned(t, 3)
		adopted := false
		for _, p := range got {
			adopted = adopted || p.UID == orphan.UID
		}
		if !adopted {
			t.Errorf("the matching orphan was not adopted: %d pods owned without it", len(got))
		}
		waitStatus(t, "3 replicas, fully labelled, generation observed", func(st corev1.ReplicationControllerStatus) bool {
			return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ObservedGeneration == 1 && st.ReadyReplicas == 0
		})
		for _, p := range got {
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
		waitStatus(t, "3 ready and available", func(st corev1.ReplicationControllerStatus) bool {
			return st.ReadyReplicas == 3 && st.AvailableReplicas == 3
		})
	})

	t.Run("scale subresource", func(t *testing.T) {
		_, err := admin.Put().Resource(rcs.Resource(), ns, "web", "scale").Body(&autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 1},
		}).Do(t.Context())
		if err != nil {
			t.Fatalf("scale to 1: %v", err)
		}
		waitOwned(t, 1)
		waitStatus(t, "1 replica at generation 2", func(st corev1.ReplicationControllerStatus) bool {
			return st.Replicas == 1 && st.ObservedGeneration == 2
		})
	})

	t.Run("deleting it takes its pods", func(t *testing.T) {
		if err := rcs.Delete(t.Context(), ns, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the pods collected", func(ctx context.Context) (bool, error) {
			list, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: "app=rc-web"})
			if err != nil {
				return false, err
			}
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil {
					return false, fmt.Errorf("pod %s still there", p.Name)
				}
			}
			return true, nil
		})
	})
}
