package server

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pods/ephemeralcontainers adds debug containers to a pod, as kubectl debug does with a
// strategic merge patch; the pod's own update keeps them, and existing ones may not go.
func TestEphemeralContainersSubresource(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pod := "/api/v1/namespaces/" + ns + "/pods/web"
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("web", nil), nil)

	var got corev1.Pod
	h.mustDo(http.StatusOK, "GET", pod+"/ephemeralcontainers", "", nil, &got)
	if got.Name != "web" || len(got.Spec.EphemeralContainers) != 0 {
		t.Fatalf("GET ephemeralcontainers: %+v", got)
	}

	patch := map[string]any{"spec": map[string]any{"ephemeralContainers": []any{map[string]any{
		"name": "debugger", "image": "busybox", "targetContainerName": "app", "stdin": true, "tty": true}}}}
	h.mustDo(http.StatusOK, "PATCH", pod+"/ephemeralcontainers", "application/strategic-merge-patch+json", patch, &got)
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].TargetContainerName != "app" ||
		got.Spec.EphemeralContainers[0].ImagePullPolicy == "" {
		t.Fatalf("after the patch: %+v", got.Spec.EphemeralContainers)
	}

	// The pod's own update neither removes nor adds ephemeral containers.
	h.mustDo(http.StatusOK, "GET", pod, "", nil, &got)
	got.Spec.EphemeralContainers = nil
	got.Labels = map[string]string{"v": "2"}
	h.mustDo(http.StatusOK, "PUT", pod, "", &got, &got)
	if len(got.Spec.EphemeralContainers) != 1 || got.Labels["v"] != "2" {
		t.Fatalf("main update changed the ephemeral containers: %+v", got.Spec.EphemeralContainers)
	}
	got.Spec.EphemeralContainers = append(got.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "other", Image: "busybox"}})
	h.mustDo(http.StatusOK, "PUT", pod, "", &got, &got)
	if len(got.Spec.EphemeralContainers) != 1 {
		t.Fatalf("main update added an ephemeral container: %+v", got.Spec.EphemeralContainers)
	}

	// Through the subresource, existing ones may not be removed, and names stay unique.
	got.Spec.EphemeralContainers = nil
	var st metav1.Status
	if code, _ := h.do("PUT", pod+"/ephemeralcontainers", "", &got, &st); code != http.StatusUnprocessableEntity ||
		st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.ephemeralContainers" {
		t.Fatalf("removing an ephemeral container: %d %+v", code, st)
	}
	dup := map[string]any{"spec": map[string]any{"ephemeralContainers": []any{map[string]any{"name": "app", "image": "busybox"}}}}
	// The patch puts the new container first.
	if code, _ := h.do("PATCH", pod+"/ephemeralcontainers", "application/strategic-merge-patch+json", dup, &st); code != http.StatusUnprocessableEntity ||
		st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "spec.ephemeralContainers[0].name" ||
		st.Details.Causes[0].Type != metav1.CauseTypeFieldValueDuplicate {
		t.Fatalf("an ephemeral container named as the app: %d %+v", code, st)
	}

	// Discovery lists the subresource as Kubernetes does.
	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/api/v1", "", nil, &list)
	found := false
	for _, r := range list.APIResources {
		if r.Name == "pods/ephemeralcontainers" {
			found = r.Kind == "Pod" && len(r.Verbs) == 3
		}
	}
	if !found {
		t.Fatal("pods/ephemeralcontainers is not in discovery as a Pod subresource with get, patch and update")
	}
}
