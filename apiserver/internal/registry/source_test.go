package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/testwait"
)

// An informer over the registry's Source lists what is there, then follows creates, updates and
// deletes, as one over the REST client does.
func TestSourceFeedsInformers(t *testing.T) {
	r := newTestRegistry(t)
	res := resource(t, "configmaps")
	mustCreate(t, r, res, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}})

	f := informer.NewFactory(r.Source(), informer.FactoryConfig{Watch: true})
	inf := f.For("configmaps", nil)
	go func() { _ = f.Start(t.Context()) }()
	testwait.For(t, "the first list", func() bool { _, ok := inf.Store().Get("default/before"); return ok })

	mustCreate(t, r, res, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Data: map[string]string{"k": "1"}})
	testwait.For(t, "a create", func() bool { _, ok := inf.Store().Get("default/after"); return ok })

	if _, err := r.Update(t.Context(), Key{Resource: res, Namespace: "default", Name: "after"}, UpdateOptions{}, func(obj runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		obj.(*corev1.ConfigMap).Data["k"] = "2"
		return obj, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "an update", func() bool {
		obj, ok := inf.Store().Get("default/after")
		return ok && obj.(*corev1.ConfigMap).Data["k"] == "2"
	})

	if _, err := r.Delete(t.Context(), Key{Resource: res, Namespace: "default", Name: "before"}, nil); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "a delete", func() bool { _, ok := inf.Store().Get("default/before"); return !ok })
}
