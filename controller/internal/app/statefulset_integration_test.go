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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestStatefulSet runs the StatefulSet controller against a real apiserver and RabbitMQ:
// pods made one at a time in ordinal order, each after its claim; a scale down and up
// through the scale subresource that keeps and reuses the claims; a deleted pod back under
// its name with its claim; a rolling update held at a partition, then finished; and
// whenScaled Delete, whose claims go with their pods.
func TestStatefulSet(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	sets := client.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	claims := client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-statefulset",
		Controllers:            []string{"statefulset", "garbagecollector"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})

	three := int32(3)
	set, err := sets.Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &three, ServiceName: "nginx",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create statefulset: %v", err)
	}

	getPod := func(ctx context.Context, name string) (*corev1.Pod, error) {
		return pods.Get(ctx, ns, name, metav1.GetOptions{})
	}
	absent := func(t *testing.T, name string) {
		t.Helper()
		if _, err := getPod(t.Context(), name); !errors.Is(err, apierror.ErrNotFound) {
			t.Fatalf("pod %s: %v, want it not made yet", name, err)
		}
	}
	observed := func(t *testing.T, replicas int32) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("status.replicas %d", replicas), func(ctx context.Context) (bool, error) {
			cur, err := sets.Get(ctx, ns, "web", metav1.GetOptions{})
			return err == nil && cur.Status.Replicas == replicas && cur.Status.ObservedGeneration == cur.Generation, err
		})
	}
	makeReady := func(t *testing.T, name string) {
		t.Helper()
		p, err := getPod(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err := pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claimUIDs := map[string]types.UID{}

	t.Run("ordered creation", func(t *testing.T) {
		for i := range 3 {
			name := fmt.Sprintf("web-%d", i)
			waitUntil(t, name+" and its claim", func(ctx context.Context) (bool, error) {
				p, err := getPod(ctx, name)
				if err != nil {
					return false, err
				}
				c, err := claims.Get(ctx, ns, "data-"+name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				claimUIDs[c.Name] = c.UID
				if p.Spec.Hostname != name || p.Spec.Subdomain != "nginx" || p.Labels[appsv1.StatefulSetPodNameLabel] != name ||
					p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(i) || p.Labels[history.HashLabel] == "" {
					return false, fmt.Errorf("pod %s identity: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
				}
				return true, nil
			})
			observed(t, int32(i+1))
			if i < 2 {
				// The controller has seen this pod and written status: the next must wait for it.
				absent(t, fmt.Sprintf("web-%d", i+1))
			}
			makeReady(t, name)
		}
		waitUntil(t, "3 ready replicas", func(ctx context.Context) (bool, error) {
			cur, err := sets.Get(ctx, ns, "web", metav1.GetOptions{})
			return err == nil && cur.Status.ReadyReplicas == 3 && cur.Status.CurrentRevision != "" &&
				cur.Status.CurrentRevision == cur.Status.UpdateRevision, err
		})
	})

	var peak atomic.Int32
	kctx, kcancel := context.WithCancel(t.Context())
	defer kcancel()
	go fakeKubelets(kctx, admin, ns, &peak)

	scale := func(t *testing.T, n int32) {
		t.Helper()
		_, err := admin.Put().Resource(sets.Resource(), ns, "web", "scale").Body(&autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: n},
		}).Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
	}
	readyPods := func(n int32) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			cur, err := sets.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			list, err := pods.List(ctx, ns, metav1.ListOptions{})
			return err == nil && cur.Status.ReadyReplicas == n && cur.Status.Replicas == n && len(list.Items) == int(n), err
		}
	}

	t.Run("scale down keeps claims, scale up reuses them", func(t *testing.T) {
		scale(t, 1)
		waitUntil(t, "one pod", readyPods(1))
		for name, uid := range claimUIDs {
			c, err := claims.Get(t.Context(), ns, name, metav1.GetOptions{})
			if err != nil || c.UID != uid {
				t.Fatalf("claim %s after scale down: %v (uid %v, want %v)", name, err, c, uid)
			}
		}
		scale(t, 3)
		waitUntil(t, "three pods", readyPods(3))
		for i := range 3 {
			p, err := getPod(t.Context(), fmt.Sprintf("web-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			c, err := claims.Get(t.Context(), ns, fmt.Sprintf("data-web-%d", i), metav1.GetOptions{})
			if err != nil || c.UID != claimUIDs[c.Name] {
				t.Fatalf("claim data-web-%d after scale up: %v, want the same claim", i, err)
			}
			if v := p.Spec.Volumes; len(v) == 0 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != c.Name {
				t.Errorf("pod %s volumes %v, want claim %s first", p.Name, v[0], c.Name)
			}
		}
	})

	t.Run("a deleted pod comes back with its name and claim", func(t *testing.T) {
		old, err := getPod(t.Context(), "web-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(t.Context(), ns, "web-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "web-1 made again", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, "web-1")
			return err == nil && p.UID != old.UID && p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName == "data-web-1", err
		})
	})

	t.Run("a pod that lost its identity label gets it back", func(t *testing.T) {
		p, err := getPod(t.Context(), "web-0")
		if err != nil {
			t.Fatal(err)
		}
		delete(p.Labels, appsv1.StatefulSetPodNameLabel)
		if _, err := pods.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "web-0 labelled with its name again", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, "web-0")
			return err == nil && p.Labels[appsv1.StatefulSetPodNameLabel] == "web-0", err
		})
	})

	t.Run("rolling update held at a partition", func(t *testing.T) {
		patch := `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"c","image":"minik8s/echo:2.0"}]}}}}`
		if _, err := sets.Patch(t.Context(), ns, "web", types.StrategicMergePatchType, []byte(patch)); err != nil {
			t.Fatal(err)
		}
		image := func(ctx context.Context, i int) string {
			p, err := getPod(ctx, fmt.Sprintf("web-%d", i))
			if err != nil || p.DeletionTimestamp != nil {
				return ""
			}
			return p.Spec.Containers[0].Image
		}
		waitUntil(t, "web-2 updated, status at the partition", func(ctx context.Context) (bool, error) {
			cur, err := sets.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := cur.Status
			return image(ctx, 2) == "minik8s/echo:2.0" && st.UpdatedReplicas == 1 && st.CurrentReplicas == 2 && st.ReadyReplicas == 3 &&
				st.CurrentRevision != st.UpdateRevision && st.ObservedGeneration == cur.Generation, nil
		})
		for i := range 2 {
			if img := image(t.Context(), i); img != "minik8s/echo:1.0" {
				t.Errorf("web-%d runs %q below the partition, want minik8s/echo:1.0", i, img)
			}
		}
		if _, err := sets.Patch(t.Context(), ns, "web", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "rollout complete", func(ctx context.Context) (bool, error) {
			cur, err := sets.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := cur.Status
			return image(ctx, 0) == "minik8s/echo:2.0" && image(ctx, 1) == "minik8s/echo:2.0" && st.UpdatedReplicas == 3 &&
				st.CurrentReplicas == 3 && st.CurrentRevision == st.UpdateRevision && st.ReadyReplicas == 3, nil
		})
		revs := client.MustFor[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](admin)
		list, err := revs.List(t.Context(), ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned := 0
		for _, r := range list.Items {
			if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == set.UID {
				owned++
			}
		}
		if owned != 2 {
			t.Errorf("%d ControllerRevisions owned by the set, want 2", owned)
		}
	})
	t.Run("whenScaled Delete removes the claims of pods scaled away", func(t *testing.T) {
		if _, err := sets.Patch(t.Context(), ns, "web", types.MergePatchType,
			[]byte(`{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"}}}`)); err != nil {
			t.Fatal(err)
		}
		scale(t, 2)
		waitUntil(t, "data-web-2 deleted with web-2, the others kept", func(ctx context.Context) (bool, error) {
			if _, err := claims.Get(ctx, ns, "data-web-2", metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
				return false, err
			}
			for _, name := range []string{"data-web-0", "data-web-1"} {
				c, err := claims.Get(ctx, ns, name, metav1.GetOptions{})
				if err != nil || c.DeletionTimestamp != nil || len(c.OwnerReferences) != 0 {
					return false, fmt.Errorf("claim %s: %v %v", name, err, c)
				}
			}
			return true, nil
		})
	})
}
