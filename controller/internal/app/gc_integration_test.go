package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestGarbageCollector runs the garbage collector against a real apiserver and RabbitMQ with
// ConfigMaps as owners (any kind will do) and ConfigMaps, Secrets and pods as dependents.
func TestGarbageCollector(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	cms := client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](admin)
	secrets := client.MustFor[*corev1.Secret, *corev1.SecretList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	const ns = "default"
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-gc",
		Controllers:            []string{"garbagecollector"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})

	ctx := t.Context()
	owned := func(owners ...*corev1.ConfigMap) []metav1.OwnerReference {
		var refs []metav1.OwnerReference
		for _, o := range owners {
			block := true
			refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: &block})
		}
		return refs
	}
	newCM := func(name string, finalizers []string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers, OwnerReferences: owned(owners...)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create configmap %s: %v", name, err)
		}
		return cm
	}
	gone := func(what string, get func(context.Context) error) {
		t.Helper()
		waitUntil(t, what+" to be gone", func(ctx context.Context) (bool, error) {
			err := get(ctx)
			return errors.Is(err, apierror.ErrNotFound), err
		})
	}
	cmGone := func(name string) {
		t.Helper()
		gone("configmap "+name, func(ctx context.Context) error { _, err := cms.Get(ctx, ns, name, metav1.GetOptions{}); return err })
	}
	del := func(name string, p metav1.DeletionPropagation) {
		t.Helper()
		if err := cms.Delete(ctx, ns, name, metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}

	t.Run("background", func(t *testing.T) {
		owner := newCM("bg-owner", nil)
		newCM("bg-cm", nil, owner)
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bg-secret", OwnerReferences: owned(owner)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bg-pod", OwnerReferences: owned(owner)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		del("bg-owner", metav1.DeletePropagationBackground)
		cmGone("bg-cm")
		gone("secret bg-secret", func(ctx context.Context) error {
			_, err := secrets.Get(ctx, ns, "bg-secret", metav1.GetOptions{})
			return err
		})
		gone("pod bg-pod", func(ctx context.Context) error {
			_, err := pods.Get(ctx, ns, "bg-pod", metav1.GetOptions{})
			return err
		})
	})

	t.Run("orphan", func(t *testing.T) {
		owner := newCM("or-owner", nil)
		other := newCM("or-other", nil)
		newCM("or-dep", nil, owner, other)
		del("or-owner", metav1.DeletePropagationOrphan)
		cmGone("or-owner")
		dep, err := cms.Get(ctx, ns, "or-dep", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("orphaned dependent: %v", err)
		}
		if len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].UID != other.UID {
			t.Fatalf("orphaned dependent's owners %v, want only or-other", dep.OwnerReferences)
		}
	})

	t.Run("foreground waits for a blocking dependent", func(t *testing.T) {
		owner := newCM("fg-owner", nil)
		child := newCM("fg-child", []string{"example.com/hold"}, owner)
		newCM("fg-grandchild", nil, child)
		del("fg-owner", metav1.DeletePropagationForeground)
		// The child is deleted (in the foreground too: it has a dependent) and its finalizer
		// holds it, so the owner must stay.
		waitUntil(t, "fg-child to be deleting and fg-grandchild gone", func(ctx context.Context) (bool, error) {
			c, err := cms.Get(ctx, ns, "fg-child", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, err = cms.Get(ctx, ns, "fg-grandchild", metav1.GetOptions{})
			return c.DeletionTimestamp != nil && errors.Is(err, apierror.ErrNotFound), err
		})
		o, err := cms.Get(ctx, ns, "fg-owner", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("owner gone while a blocking dependent is still there: %v", err)
		}
		if o.DeletionTimestamp == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner %v %v, want deleting with %s", o.DeletionTimestamp, o.Finalizers, metav1.FinalizerDeleteDependents)
		}
		c, err := cms.Get(ctx, ns, "fg-child", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == "example.com/hold" })
		if _, err := cms.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("release fg-child: %v", err)
		}
		cmGone("fg-child")
		cmGone("fg-owner")
	})

	t.Run("owners verified by uid", func(t *testing.T) {
		// A dependent naming an owner that never existed, and one naming an earlier object
		// of a name that exists now.
		never := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "uid-never", UID: types.UID("00000000-0000-0000-0000-000000000001")}}
		newCM("uid-dep-never", nil, never)
		first := newCM("uid-owner", nil)
		del("uid-owner", metav1.DeletePropagationOrphan)
		cmGone("uid-owner")
		newCM("uid-owner", nil)
		newCM("uid-dep-stale", nil, first)
		keep := newCM("uid-dep-live", nil, mustGetCM(t, cms, "uid-owner"))
		cmGone("uid-dep-never")
		cmGone("uid-dep-stale")
		if got, err := cms.Get(ctx, ns, keep.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("dependent of a live owner: %v %v", err, got)
		}
	})
	t.Run("an owner of a custom group version not served", func(t *testing.T) {
		// Discovery answers 404 for the group version (its CustomResourceDefinition is gone,
		// or never was): the owner is gone with it.
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom-dep",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "demo.minik8s.io/v1", Kind: "EchoApp", Name: "app", UID: "00000000-0000-0000-0000-0000000000e1"}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cmGone("custom-dep")
	})
}

func mustGetCM(t *testing.T, cms *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList], name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cms.Get(t.Context(), "default", name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
