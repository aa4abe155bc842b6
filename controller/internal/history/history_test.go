package history

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func daemonSet(image string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "u1"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
		}},
	}
}

func TestTemplatePatch(t *testing.T) {
	patch, err := TemplatePatch(daemonSet("busybox:1"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["spec"]) != 1 {
		t.Fatalf("patch %s holds more than spec.template", patch)
	}
	tmpl := got["spec"]["template"]
	if tmpl["$patch"] != "replace" {
		t.Errorf("patch %s: template not replaced as a whole", patch)
	}
	if _, ok := tmpl["spec"]; !ok {
		t.Errorf("patch %s has no pod spec", patch)
	}
	if _, err := TemplatePatch(&corev1.Pod{}); err == nil {
		t.Error("a pod has no spec.template, yet it made a patch")
	}
}

func TestNewHashesAndNames(t *testing.T) {
	gvk := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	ds := daemonSet("busybox:1")
	p1, _ := TemplatePatch(ds)
	p2, _ := TemplatePatch(daemonSet("busybox:2"))
	r1 := New(ds, gvk, ds.Spec.Template.Labels, p1, 1, nil)
	again := New(ds, gvk, ds.Spec.Template.Labels, p1, 5, nil)
	r2 := New(ds, gvk, ds.Spec.Template.Labels, p2, 2, nil)
	var one int32 = 1
	collided := New(ds, gvk, ds.Spec.Template.Labels, p1, 1, &one)

	if r1.Name != again.Name || r1.Labels[HashLabel] != again.Labels[HashLabel] {
		t.Errorf("the same template named %s and %s", r1.Name, again.Name)
	}
	if r1.Name == r2.Name || r1.Name == collided.Name {
		t.Errorf("names do not tell templates or collisions apart: %s, %s, %s", r1.Name, r2.Name, collided.Name)
	}
	if want := "agent-" + r1.Labels[HashLabel]; r1.Name != want {
		t.Errorf("name %s, want %s", r1.Name, want)
	}
	if r1.Labels["app"] != "agent" || r1.Namespace != "ns" {
		t.Errorf("revision lost the template's labels or the namespace: %+v", r1.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(r1); ref == nil || ref.UID != "u1" || ref.Kind != "DaemonSet" {
		t.Errorf("controller reference %+v", ref)
	}
	if ds.Spec.Template.Labels[HashLabel] != "" {
		t.Error("New wrote into the template's labels")
	}
	if !Equal(r1, again) || Equal(r1, r2) || !Equal(nil, nil) || Equal(r1, nil) {
		t.Error("Equal does not compare data")
	}
	if got := FindEqual([]*appsv1.ControllerRevision{r2, again, r1}, r1); len(got) != 2 {
		t.Errorf("FindEqual found %d, want 2", len(got))
	}
}

func TestSortAndNext(t *testing.T) {
	now := time.Now()
	rev := func(name string, n int64, at time.Time) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)}, Revision: n}
	}
	rs := []*appsv1.ControllerRevision{rev("c", 3, now), rev("b", 1, now), rev("a", 1, now), rev("d", 1, now.Add(-time.Minute))}
	Sort(rs)
	var got string
	for _, r := range rs {
		got += r.Name
	}
	if got != "dabc" {
		t.Errorf("order %s, want dabc", got)
	}
	if n := Next(rs); n != 4 {
		t.Errorf("next %d, want 4", n)
	}
	if n := Next(nil); n != 1 {
		t.Errorf("next of none %d, want 1", n)
	}
}
