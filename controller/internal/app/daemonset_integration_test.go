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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/daemonset"
	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/client"
)

// TestDaemonSet runs the DaemonSet controller against a real apiserver and RabbitMQ, with
// Node objects and no scheduler or kubelet: a pod meant for each node (by its matchFields
// affinity), one more for a node that joins, none left on a node tainted NoExecute that the
// pods do not tolerate, an image update rolled onto every node under a new
// ControllerRevision, and the status counting it all.
func TestDaemonSet(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](admin)
	dss := client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](admin)
	revs := client.MustFor[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-daemonset",
		Controllers:            []string{"daemonset"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	addNode := func(t *testing.T, name string) {
		t.Helper()
		if _, err := nodes.Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
	}
	addNode(t, "ds-a")
	addNode(t, "ds-b")

	ds, err := dss.Create(t.Context(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType ||
		ru == nil || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("defaults: %+v, revisionHistoryLimit %v", ds.Spec.UpdateStrategy, ds.Spec.RevisionHistoryLimit)
	}

	// placed is node -> image of the live pods the DaemonSet controls, and their hashes.
	placed := func(ctx context.Context) (map[string]string, map[string]bool, error) {
		list, err := pods.List(ctx, ns, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		out, hashes := map[string]string{}, map[string]bool{}
		for _, p := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&p); ref == nil || ref.UID != ds.UID || p.DeletionTimestamp != nil {
				continue
			}
			n := daemonset.TargetNode(&p)
			if _, dup := out[n]; dup {
				return nil, nil, fmt.Errorf("two pods for node %q", n)
			}
			out[n] = p.Spec.Containers[0].Image
			hashes[p.Labels[history.HashLabel]] = true
		}
		return out, hashes, nil
	}
	waitPlaced := func(t *testing.T, what string, want map[string]string) {
		t.Helper()
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			got, hashes, err := placed(ctx)
			if err == nil && (len(hashes) != 1 || fmt.Sprint(got) != fmt.Sprint(want)) {
				err = fmt.Errorf("pods by node %v of %d revisions, want %v", got, len(hashes), want)
			}
			return err == nil, err
		})
	}
	waitStatus := func(t *testing.T, what string, desired, updated int32) {
		t.Helper()
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			cur, err := dss.Get(ctx, ns, "agent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := cur.Status
			return st.ObservedGeneration == cur.Generation && st.DesiredNumberScheduled == desired && st.CurrentNumberScheduled == desired &&
				st.UpdatedNumberScheduled == updated && st.NumberUnavailable == desired && st.NumberMisscheduled == 0, nil
		})
	}

	v1 := "minik8s/echo:1.0"
	waitPlaced(t, "a pod for each node", map[string]string{"ds-a": v1, "ds-b": v1})
	waitStatus(t, "status of two nodes", 2, 2)

	addNode(t, "ds-c")
	waitPlaced(t, "the new node's pod", map[string]string{"ds-a": v1, "ds-b": v1, "ds-c": v1})
	waitStatus(t, "status of three nodes", 3, 3)

	b, err := nodes.Get(t.Context(), "", "ds-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	if _, err := nodes.Update(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, "no pod on the tainted node", map[string]string{"ds-a": v1, "ds-c": v1})
	waitStatus(t, "status without the tainted node", 2, 2)

	cur, err := dss.Get(t.Context(), ns, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := "minik8s/echo:2.0"
	cur.Spec.Template.Spec.Containers[0].Image = v2
	if _, err := dss.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No pod ever becomes ready here, so every old pod is unavailable and replaced at once.
	waitPlaced(t, "the new image on every node", map[string]string{"ds-a": v2, "ds-c": v2})
	waitStatus(t, "status after the update", 2, 2)

	list, err := revs.List(t.Context(), ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int64
	for _, r := range list.Items {
		if ref := metav1.GetControllerOfNoCopy(&r); ref != nil && ref.UID == ds.UID {
			numbers = append(numbers, r.Revision)
		}
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int64{1, 2}) {
		t.Errorf("revisions %v, want [1 2]", numbers)
	}
}
