package server

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An invalid update is refused with each problem named once, whether in the spec or in the
// metadata.
func TestUpdateErrorsOnce(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"
	h.mustDo(http.StatusCreated, "POST", pods, "", podManifest("web", nil), nil)
	var pod corev1.Pod
	h.mustDo(http.StatusOK, "GET", pods+"/web", "", nil, &pod)
	pod.Spec.Containers[0].Image = ""
	pod.Labels = map[string]string{"bad label": "x"}
	var st metav1.Status
	if code, _ := h.do("PUT", pods+"/web", "", &pod, &st); code != http.StatusUnprocessableEntity || st.Details == nil {
		t.Fatalf("invalid update: %d %+v", code, st)
	}
	seen := map[string]int{}
	for _, c := range st.Details.Causes {
		seen[c.Field]++
	}
	for _, f := range []string{"spec.containers[0].image", "metadata.labels"} {
		if seen[f] != 1 {
			t.Errorf("%s named %d times in %+v, want once", f, seen[f], st.Details.Causes)
		}
	}
}
