package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/testwait"
)

// TestCustomResourcesSurviveARestart runs a custom resource through an apiserver restart with
// client-go's dynamic client and an informer, as an operator does: objects, their status and
// defaults read back at the first request after the restart, the informer resumes and sees
// what is created after it, and every change goes through the bus under the resource's word.
func TestCustomResourcesSurviveARestart(t *testing.T) {
	requireIntegration(t)
	srv := startServer(t)
	group := fmt.Sprintf("r%08x.e2e.minik8s.io", rand.Uint32())
	resource := "widgets." + group
	rec := startRecorder(t, srv.amqpURL, func(h map[string]string) bool { return h[bus.HeaderResource] == resource })

	cfg, err := clientcmd.BuildConfigFromFlags("", srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": resource},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{
						"size":  map[string]any{"type": "integer", "default": int64(3)},
						"color": map[string]any{"type": "string"},
					}},
					"status": map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string"}}},
				}}},
			}},
		},
	}}
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the definition: %v", err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace("default")
	widget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"color": "red"},
		}}
	}
	w1, err := widgets.Create(t.Context(), widget("w1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create w1: %v", err)
	}
	_ = unstructured.SetNestedField(w1.Object, "Ready", "status", "phase")
	if _, err := widgets.UpdateStatus(t.Context(), w1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of w1: %v", err)
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	watchAdded(t, dyn, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "default", func(u *unstructured.Unstructured) {
		mu.Lock()
		seen[u.GetName()] = true
		mu.Unlock()
	})

	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.start(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The first request after the restart: the resource is served, the object whole.
	got, err := widgets.Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("w1 after the restart: %v", err)
	}
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	if size != 3 || phase != "Ready" || got.GetUID() != w1.GetUID() {
		t.Errorf("w1 after the restart: size %d (want the default 3), phase %q (want Ready), uid %s (want %s)", size, phase, got.GetUID(), w1.GetUID())
	}
	if _, err := widgets.Create(t.Context(), widget("w2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create w2 after the restart: %v", err)
	}
	testwait.For(t, "the informer to see w1 and w2, created after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["w1"] && seen["w2"]
	})

	// Deleting the definition deletes its objects, then it stops being served.
	if err := crds.Delete(t.Context(), resource, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the definition: %v", err)
	}
	testwait.For(t, "the definition to go", func() bool {
		_, err := crds.Get(t.Context(), resource, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := widgets.List(t.Context(), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("list after the definition went: %v, want NotFound", err)
	}

	word := bus.EncodeWord(resource)
	testwait.For(t, "the bus to carry w1's and w2's changes, their deletions included", func() bool {
		msgs, _ := rec.snapshot()
		var keys []string
		for _, m := range msgs {
			keys = append(keys, m.headers[bus.HeaderName]+" "+m.routingKey)
		}
		return slices.Contains(keys, "w1 "+word+".added") && slices.Contains(keys, "w1 "+word+".modified") &&
			slices.Contains(keys, "w2 "+word+".added") && slices.Contains(keys, "w1 "+word+".deleted") &&
			slices.Contains(keys, "w2 "+word+".deleted")
	})
}

// watchAdded runs a client-go dynamic informer on gvr in namespace until the test ends, as an
// operator's cache does, calls add for every object it adds, and returns once it has synced.
func watchAdded(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string, add func(u *unstructured.Unstructured)) {
	t.Helper()
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	informer := factory.ForResource(gvr).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			add(u)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop once ctx is done.
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("the %s informer never synced", gvr.Resource)
	}
}
