package server

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PriorityClasses: served with upstream's rules, and pods get their class's priority at
// admission, as Kubernetes' Priority admission gives it.
func TestPriorityClasses(t *testing.T) {
	h := newHarness(t)
	const pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
	pods := "/api/v1/namespaces/default/pods"
	class := func(name string, value int, def bool) map[string]any {
		return map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": map[string]any{"name": name}, "value": value, "globalDefault": def}
	}
	pod := func(name, class string, priority *int32) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{PriorityClassName: class, Priority: priority, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	var st metav1.Status

	h.mustDo(http.StatusCreated, "POST", pcs, "application/json", class("high", 1000, false), nil)
	var got corev1.Pod
	h.mustDo(http.StatusCreated, "POST", pods, "application/json", pod("important", "high", nil), &got)
	if got.Spec.Priority == nil || *got.Spec.Priority != 1000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("pod of class high: priority %v, policy %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	got = corev1.Pod{}
	h.mustDo(http.StatusCreated, "POST", pods, "application/json", pod("plain", "", nil), &got)
	if *got.Spec.Priority != 0 || got.Spec.PriorityClassName != "" {
		t.Fatalf("pod without class and no default: %d %q", *got.Spec.Priority, got.Spec.PriorityClassName)
	}

	if code, _ := h.do("POST", pods, "application/json", pod("lost", "missing", nil), &st); code != http.StatusForbidden ||
		st.Message != `pods "lost" is forbidden: no PriorityClass with name missing was found` {
		t.Fatalf("missing class: %d %q", code, st.Message)
	}
	five := int32(5)
	if code, _ := h.do("POST", pods, "application/json", pod("stated", "high", &five), &st); code != http.StatusForbidden ||
		!strings.Contains(st.Message, "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000") {
		t.Fatalf("stated priority: %d %q", code, st.Message)
	}

	// One global default, which pods without a class get.
	h.mustDo(http.StatusCreated, "POST", pcs, "application/json", class("normal", 10, true), nil)
	if code, _ := h.do("POST", pcs, "application/json", class("other-default", 20, true), &st); code != http.StatusForbidden ||
		!strings.Contains(st.Message, "PriorityClass normal is already marked as default. Only one default can exist") {
		t.Fatalf("second default: %d %q", code, st.Message)
	}
	got = corev1.Pod{}
	h.mustDo(http.StatusCreated, "POST", pods, "application/json", pod("defaulted", "", nil), &got)
	if *got.Spec.Priority != 10 || got.Spec.PriorityClassName != "normal" {
		t.Fatalf("pod under a default class: %d %q", *got.Spec.Priority, got.Spec.PriorityClassName)
	}

	// Bad classes are 422 with the field, the system ones cannot go, values never change.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{class("system-mine", 10, false), "metadata.name"},
		{class("huge", 1000000001, false), "value"},
		{map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": "odd"}, "value": 1, "preemptionPolicy": "Sometimes"}, "preemptionPolicy"},
	} {
		if code, _ := h.do("POST", pcs, "application/json", tc.body, &st); code != http.StatusUnprocessableEntity || st.Details == nil ||
			len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != tc.field {
			t.Errorf("%v: %d %+v", tc.body["metadata"], code, st.Details)
		}
	}
	// The apiserver's start (apiserver/internal/app) creates the system classes; here one is
	// created as it would be.
	h.mustDo(http.StatusCreated, "POST", pcs, "application/json", class("system-cluster-critical", 2000000000, false), nil)
	if code, _ := h.do("DELETE", pcs+"/system-cluster-critical", "", nil, &st); code != http.StatusForbidden ||
		!strings.Contains(st.Message, "the system-cluster-critical system priority class cannot be deleted") {
		t.Fatalf("delete a system class: %d %q", code, st.Message)
	}
	if code, _ := h.do("PATCH", pcs+"/high", "application/merge-patch+json", `{"value": 2000}`, &st); code != http.StatusUnprocessableEntity {
		t.Fatalf("change a value: %d %q", code, st.Message)
	}
}
