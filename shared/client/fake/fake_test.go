package fake

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"a": "1"}}}
}

func TestWriter(t *testing.T) {
	ctx := t.Context()
	w := New(func() *corev1.Pod { return &corev1.Pod{} })

	created, err := w.Create(ctx, pod("p"), metav1.CreateOptions{})
	if err != nil || created.UID == "" || created.ResourceVersion == "" {
		t.Fatalf("Create = %+v, %v; want a uid and a resourceVersion", created.ObjectMeta, err)
	}
	if _, err := w.Create(ctx, pod("p"), metav1.CreateOptions{}); !errors.Is(err, apierror.ErrAlreadyExists) {
		t.Errorf("second Create: %v, want AlreadyExists", err)
	}
	gen := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}}
	if g, err := w.Create(ctx, gen, metav1.CreateOptions{}); err != nil || len(g.Name) <= len("web-") {
		t.Errorf("Create with generateName = %q, %v; want a generated name", g.Name, err)
	}

	stale := created.DeepCopy()
	created.Labels["a"] = "2"
	updated, err := w.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil || updated.ResourceVersion == created.ResourceVersion {
		t.Fatalf("Update = %v, %v; want a new resourceVersion", updated.ResourceVersion, err)
	}
	if _, err := w.UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("UpdateStatus of a stale copy: %v, want Conflict", err)
	}

	if _, err := w.Patch(ctx, "ns", "p", types.MergePatchType, []byte(`{"metadata":{"uid":"other","labels":{"b":"x"}}}`)); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("Patch with another uid: %v, want Conflict", err)
	}
	patched, err := w.Patch(ctx, "ns", "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":null,"b":"x"}}}`))
	if err != nil || patched.Labels["b"] != "x" || patched.Labels["a"] != "" {
		t.Errorf("Patch = %v, %v; want label a removed and b added", patched.Labels, err)
	}

	wrong := types.UID("other")
	if err := w.Delete(ctx, "ns", "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !errors.Is(err, apierror.ErrConflict) {
		t.Errorf("Delete with another uid: %v, want Conflict", err)
	}
	w.FailNext(VerbDelete, apierror.New(apierror.ErrUnavailable, "down"))
	if err := w.Delete(ctx, "ns", "p", metav1.DeleteOptions{}); !errors.Is(err, apierror.ErrUnavailable) {
		t.Errorf("Delete after FailNext: %v, want the injected error", err)
	}
	if _, ok := w.Object("ns", "p"); !ok {
		t.Errorf("a failed Delete removed the object")
	}
	if err := w.Delete(ctx, "ns", "p", metav1.DeleteOptions{}); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if _, err := w.Get(ctx, "ns", "p", metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want NotFound", err)
	}
	if n := len(w.CallsOf(VerbDelete)); n != 3 {
		t.Errorf("%d delete calls recorded, want 3", n)
	}
}
