package server

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// An eviction spends the pod's budget: refused with 429 and the budget as cause while no
// disruption is allowed, then allowed once, recording the pod in disruptedPods.
func TestEvictionSpendsTheBudget(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"
	pdbs := "/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets"
	labels := map[string]string{"app": "web"}
	for _, name := range []string{"web-1", "web-2"} {
		h.mustDo(http.StatusCreated, "POST", pods, "", podManifest(name, labels), nil)
		var pod corev1.Pod
		h.mustDo(http.StatusOK, "GET", pods+"/"+name, "", nil, &pod)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		h.mustDo(http.StatusOK, "PUT", pods+"/"+name+"/status", "", &pod, nil)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	h.mustDo(http.StatusCreated, "POST", pdbs, "", pdb, pdb)

	var header http.Header
	evict := func(name string) (int, metav1.Status) {
		ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
		var st metav1.Status
		var code int
		code, header = h.do("POST", pods+"/"+name+"/eviction", "", ev, &st)
		return code, st
	}

	// Not yet observed by the controller: come back in 10 s, in the Status and the header.
	if code, st := evict("web-1"); code != http.StatusTooManyRequests || st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.RetryAfterSeconds != 10 || header.Get("Retry-After") != "10" {
		t.Fatalf("eviction before the budget is observed: %d %+v, Retry-After %q", code, st, header.Get("Retry-After"))
	}

	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2}
	h.mustDo(http.StatusOK, "PUT", pdbs+"/web/status", "", pdb, pdb)
	code, st := evict("web-1")
	if code != http.StatusTooManyRequests || st.Message != "Cannot evict pod as it would violate the pod's disruption budget." ||
		st.Reason != metav1.StatusReasonTooManyRequests || st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" || header.Get("Retry-After") != "" {
		t.Fatalf("eviction with no disruption allowed: %d %+v, Retry-After %q", code, st, header.Get("Retry-After"))
	}
	if code, _ := h.do("GET", pods+"/web-1", "", nil, nil); code != http.StatusOK {
		t.Fatalf("refused eviction deleted the pod: %d", code)
	}

	pdb.Status.DisruptionsAllowed, pdb.Status.DesiredHealthy = 1, 1
	h.mustDo(http.StatusOK, "PUT", pdbs+"/web/status", "", pdb, pdb)
	if code, st := evict("web-1"); code != http.StatusCreated {
		t.Fatalf("eviction with a disruption allowed: %d %+v", code, st)
	}
	var got policyv1.PodDisruptionBudget
	h.mustDo(http.StatusOK, "GET", pdbs+"/web", "", nil, &got)
	if got.Status.DisruptionsAllowed != 0 || got.Status.DisruptedPods["web-1"].Time.IsZero() {
		t.Fatalf("budget after the eviction: %+v", got.Status)
	}
	if code, _ := evict("web-2"); code != http.StatusTooManyRequests {
		t.Fatalf("second eviction: %d, want 429", code)
	}
}
