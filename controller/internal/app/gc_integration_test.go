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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
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

	t.Run("custom owners", func(t *testing.T) {
		// Owners of a kind served from a CustomResourceDefinition: found through discovery,
		// and their deletion, or their definition's, reaches the collector on the bus.
		crds, err := scheme.Lookup("customresourcedefinitions")
		if err != nil {
			t.Fatal(err)
		}
		crd := &unstructured.Unstructured{}
		if err := crd.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"echoapps.gc.minik8s.io"},
 "spec":{"group":"gc.minik8s.io","scope":"Namespaced","names":{"plural":"echoapps","singular":"echoapp","kind":"EchoApp"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Dynamic(admin, crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the definition: %v", err)
		}
		// The bootstrap policy lets the controller-manager read the scheme's kinds only; reading
		// custom owners takes a grant (upstream's generic-garbage-collector may read every group).
		roles := client.MustFor[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](admin)
		bindings := client.MustFor[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](admin)
		if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-test-echoapps"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"gc.minik8s.io"}, Resources: []string{"echoapps"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bindings.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gc-test-echoapps"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gc-test-echoapps"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:kube-controller-manager"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		appsRes := &scheme.Resource{GVK: schema.GroupVersionKind{Group: "gc.minik8s.io", Version: "v1", Kind: "EchoApp"},
			Plural: "echoapps", Singular: "echoapp", Namespaced: true, Custom: true}
		apps := client.Dynamic(admin, appsRes)
		newApp := func(name string) *unstructured.Unstructured {
			t.Helper()
			app := &unstructured.Unstructured{}
			app.SetAPIVersion("gc.minik8s.io/v1")
			app.SetKind("EchoApp")
			app.SetNamespace(ns)
			app.SetName(name)
			var got *unstructured.Unstructured
			waitUntil(t, "echoapp "+name+" created", func(ctx context.Context) (bool, error) {
				var err error
				got, err = apps.Create(ctx, app, metav1.CreateOptions{})
				return err == nil, err
			})
			return got
		}
		ownedBy := func(name string, app *unstructured.Unstructured) {
			t.Helper()
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "gc.minik8s.io/v1", Kind: "EchoApp", Name: app.GetName(), UID: app.GetUID()},
					{APIVersion: "v1", Kind: "ConfigMap", Name: "custom-never", UID: "00000000-0000-0000-0000-0000000000e2"}}}},
				metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		first, second := newApp("first"), newApp("second")
		// The collector reads owners by their metadata alone.
		if m, err := client.Metadata(admin, appsRes).Get(ctx, ns, "first", metav1.GetOptions{}); err != nil || m.UID != first.GetUID() {
			t.Fatalf("a custom object as PartialObjectMetadata: uid %q, err %v; want %q (the apiserver's metadata view of unstructured objects)", m.UID, err, first.GetUID())
		}
		ownedBy("custom-child-1", first)
		ownedBy("custom-child-2", second)
		// Each child also names an owner that never was: the collector, finding the custom owner
		// there, removes that reference and keeps the child. After that only the custom owner's
		// deletion brings the child back to the collector.
		waitUntil(t, "the children kept by their custom owners", func(ctx context.Context) (bool, error) {
			for _, n := range []string{"custom-child-1", "custom-child-2"} {
				c, err := cms.Get(ctx, ns, n, metav1.GetOptions{})
				if err != nil || c.DeletionTimestamp != nil || len(c.OwnerReferences) != 1 || c.OwnerReferences[0].Kind != "EchoApp" {
					return false, err
				}
			}
			return true, nil
		})

		start := time.Now()
		if err := apps.Delete(ctx, ns, "first", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		cmGone("custom-child-1")
		// The collector's resync, every minute, would find it too; the bus tells at once.
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("the child of a deleted custom object went after %s: the collector did not hear of the deletion", took)
		}
		if _, err := cms.Get(ctx, ns, "custom-child-2", metav1.GetOptions{}); err != nil {
			t.Fatalf("the child of a live custom object: %v", err)
		}

		// Deleting the definition deletes its objects first, and so their dependents.
		if err := client.Dynamic(admin, crds).Delete(ctx, "", "echoapps.gc.minik8s.io", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		cmGone("custom-child-2")
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
