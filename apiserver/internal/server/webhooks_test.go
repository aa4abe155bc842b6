package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/admission/webhook/webhooktest"
)

const (
	vwcPath = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	mwcPath = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
)

// webhookFor is a webhook on this test's pods only: its namespace carries the label
// webhook-test=<ns>, which no other test's namespace has.
func webhookFor(ns, name, url string, ca []byte, policy admissionregistrationv1.FailurePolicyType, timeout int32, resources ...string) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	return admissionregistrationv1.ValidatingWebhook{
		Name:         name + "." + ns + ".example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources}}},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": ns}},
		FailurePolicy:           &policy,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
	}
}

func validatingConfig(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

// status decodes the Status of a refused request.
func (h *harness) refused(method, path string, body any, wantCode int, wantMsg string) {
	h.t.Helper()
	var st metav1.Status
	code, _ := h.do(method, path, "", body, &st)
	if code != wantCode || !strings.Contains(st.Message, wantMsg) {
		h.t.Fatalf("%s %s: %d %q, want %d saying %q", method, path, code, st.Message, wantCode, wantMsg)
	}
}

// Admission webhooks of a running apiserver, as Kubernetes calls them: a mutating webhook's
// JSONPatch lands in the stored pod, a validating webhook's refusal reaches the client with
// its message and code, its warnings as Warning headers, a dry run and a status update are
// shown to webhooks, an unreachable or slow webhook fails the write or not by failurePolicy,
// the webhook configurations themselves are never judged, and /metrics counts the calls.
func TestAdmissionWebhooks(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	h.mustDo(http.StatusOK, "PATCH", "/api/v1/namespaces/"+ns, "application/merge-patch+json",
		`{"metadata":{"labels":{"webhook-test":"`+ns+`"}}}`, nil)
	pods := "/api/v1/namespaces/" + ns + "/pods"
	// The mutating webhook adds to the pod's labels, which must exist for its JSONPatch.
	web := map[string]string{"app": "web"}

	labeler := webhooktest.Start(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/metadata/labels/injected","value":"yes"}]`)}
	})
	judge := webhooktest.Start(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var pod corev1.Pod
		if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
		}
		if pod.Labels["injected"] != "yes" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 422, Message: "validation ran before mutation"}}
		}
		if strings.HasPrefix(pod.Name, "bad") {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Message: "bad pods are not welcome"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"judged " + pod.Name}}
	})

	mutatingName, validatingName := "labeler-"+ns, "judge-"+ns
	t.Cleanup(func() {
		h.do("DELETE", mwcPath+"/"+mutatingName, "", nil, nil)
		h.do("DELETE", vwcPath+"/"+validatingName, "", nil, nil)
	})
	lh := webhookFor(ns, "label", labeler.URL+"/mutate", labeler.CABundle, admissionregistrationv1.Fail, 5, "pods")
	h.mustDo(http.StatusCreated, "POST", mwcPath, "", &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: mutatingName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: lh.Name, ClientConfig: lh.ClientConfig, Rules: lh.Rules,
			NamespaceSelector: lh.NamespaceSelector, FailurePolicy: lh.FailurePolicy, SideEffects: lh.SideEffects,
			TimeoutSeconds: lh.TimeoutSeconds, AdmissionReviewVersions: lh.AdmissionReviewVersions}}}, nil)
	judgeHook := webhookFor(ns, "judge", judge.URL+"/validate", judge.CABundle, admissionregistrationv1.Fail, 5, "pods", "pods/status")
	var stored admissionregistrationv1.ValidatingWebhookConfiguration
	h.mustDo(http.StatusCreated, "POST", vwcPath, "", validatingConfig(validatingName, judgeHook), &stored)
	if p := stored.Webhooks[0].MatchPolicy; p == nil || *p != admissionregistrationv1.Equivalent {
		t.Errorf("matchPolicy %v, want the Equivalent default", p)
	}

	// A mutating webhook's patch is stored; the validating one sees the mutated pod.
	resp, body := h.send("POST", pods, mustJSON(t, podManifest("good", web)), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create good: %d %s", resp.StatusCode, body)
	}
	if w := resp.Header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], "judged good") {
		t.Errorf("Warning headers %q, want the webhook's warning", w)
	}
	var good corev1.Pod
	h.mustDo(http.StatusOK, "GET", pods+"/good", "", nil, &good)
	if good.Labels["injected"] != "yes" || good.Labels["app"] != "web" {
		t.Errorf("stored labels %v, want the webhook's label beside the pod's own", good.Labels)
	}

	// A refusal carries the webhook's code and message.
	h.refused("POST", pods, podManifest("bad", web), http.StatusForbidden,
		`admission webhook "judge.`+ns+`.example.com" denied the request: bad pods are not welcome`)

	// A dry run reaches webhooks that declare no side effects on dry runs, and stores nothing.
	before := len(judge.Requests())
	h.mustDo(http.StatusCreated, "POST", pods+"?dryRun=All", "", podManifest("dry", web), nil)
	reqs := judge.Requests()
	if len(reqs) != before+1 || reqs[len(reqs)-1].DryRun == nil || !*reqs[len(reqs)-1].DryRun {
		t.Errorf("the dry run was not shown to the webhook as one")
	}
	if code, _ := h.do("GET", pods+"/dry", "", nil, nil); code != http.StatusNotFound {
		t.Errorf("the dry run stored a pod: %d", code)
	}

	// A status update is judged as pods/status, with the user who made it.
	good.Status.Message = "judged"
	h.mustDo(http.StatusOK, "PUT", pods+"/good/status", "", &good, nil)
	reqs = judge.Requests()
	last := reqs[len(reqs)-1]
	if last.SubResource != "status" || last.Operation != admissionv1.Update || last.UserInfo.Username != "admin" || last.OldObject.Raw == nil {
		t.Errorf("status update seen as %s %s/%s by %q (old object %t)", last.Operation, last.Resource.Resource, last.SubResource,
			last.UserInfo.Username, last.OldObject.Raw != nil)
	}

	// An unreachable webhook fails the write closed, or lets it through when it fails open.
	down := webhookFor(ns, "down", "https://127.0.0.1:1/", nil, admissionregistrationv1.Ignore, 5, "pods")
	h.mustDo(http.StatusOK, "PUT", vwcPath+"/"+validatingName, "", withVersion(validatingConfig(validatingName, judgeHook, down), h), nil)
	h.mustDo(http.StatusCreated, "POST", pods, "", podManifest("open", web), nil)
	*down.FailurePolicy = admissionregistrationv1.Fail
	h.mustDo(http.StatusOK, "PUT", vwcPath+"/"+validatingName, "", withVersion(validatingConfig(validatingName, judgeHook, down), h), nil)
	h.refused("POST", pods, podManifest("closed", web), http.StatusInternalServerError,
		`Internal error occurred: failed calling webhook "down.`+ns+`.example.com": failed to call webhook`)

	// A webhook slower than its timeout fails the write.
	slow := webhooktest.Start(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		<-r.Context().Done()
		return nil
	})
	h.mustDo(http.StatusOK, "PUT", vwcPath+"/"+validatingName, "", withVersion(validatingConfig(validatingName, judgeHook,
		webhookFor(ns, "slow", slow.URL, slow.CABundle, admissionregistrationv1.Fail, 1, "pods")), h), nil)
	start := time.Now()
	h.refused("POST", pods, podManifest("slow", web), http.StatusInternalServerError, "context deadline exceeded")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the write waited %v for a webhook with a 1s timeout", took)
	}

	// Webhooks that would refuse everything never judge their own configurations, so a broken
	// webhook can always be removed.
	lockout := webhookFor(ns, "lockout", "https://127.0.0.1:1/", nil, admissionregistrationv1.Fail, 5, "*/*")
	lockout.Rules[0].APIGroups, lockout.Rules[0].APIVersions = []string{"*"}, []string{"*"}
	lockout.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	lockout.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": ns}}
	lockoutConfig := validatingConfig("lockout-"+ns, lockout)
	lockoutConfig.Labels = map[string]string{"webhook-test": ns}
	h.mustDo(http.StatusCreated, "POST", vwcPath, "", lockoutConfig, nil)
	t.Cleanup(func() { h.do("DELETE", vwcPath+"/lockout-"+ns, "", nil, nil) })
	h.refused("POST", "/api/v1/namespaces/"+ns+"/configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "locked", "labels": map[string]string{"webhook-test": ns}}}, http.StatusInternalServerError, "failed calling webhook")
	h.mustDo(http.StatusOK, "PATCH", vwcPath+"/lockout-"+ns, "application/merge-patch+json", `{"metadata":{"annotations":{"still":"editable"}}}`, nil)
	h.mustDo(http.StatusOK, "DELETE", vwcPath+"/lockout-"+ns, "", nil, nil)

	// The calls were measured.
	_, _, metrics := h.raw("GET", "/metrics", "", "text/plain", nil)
	for _, want := range []string{
		`apiserver_admission_webhook_admission_duration_seconds_count{name="label.` + ns + `.example.com",operation="CREATE",rejected="false",type="admit"}`,
		`apiserver_admission_webhook_rejection_count{error_type="no_error",name="judge.` + ns + `.example.com",operation="CREATE",rejection_code="403",type="validating"}`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// withVersion sets the stored resourceVersion of a webhook configuration, for a PUT.
func withVersion(c *admissionregistrationv1.ValidatingWebhookConfiguration, h *harness) *admissionregistrationv1.ValidatingWebhookConfiguration {
	h.t.Helper()
	var cur admissionregistrationv1.ValidatingWebhookConfiguration
	h.mustDo(http.StatusOK, "GET", vwcPath+"/"+c.Name, "", nil, &cur)
	c.ResourceVersion = cur.ResourceVersion
	return c
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A webhook's matchConditions (CEL) pick the writes it is called about, after its rules and
// selectors; a configuration whose expression does not compile is refused with its field path.
func TestAdmissionWebhookMatchConditions(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	h.mustDo(http.StatusOK, "PATCH", "/api/v1/namespaces/"+ns, "application/merge-patch+json",
		`{"metadata":{"labels":{"webhook-test":"`+ns+`"}}}`, nil)
	pods := "/api/v1/namespaces/" + ns + "/pods"
	refuser := webhooktest.Start(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Message: "checked and refused"}}
	})
	hook := webhookFor(ns, "conditional", refuser.URL, refuser.CABundle, admissionregistrationv1.Fail, 5, "pods")
	name := "conditional-" + ns
	t.Cleanup(func() { h.do("DELETE", vwcPath+"/"+name, "", nil, nil) })

	hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "checked", Expression: `object.metadata.name.startsWith(`}}
	h.refused("POST", vwcPath, validatingConfig(name, hook), http.StatusUnprocessableEntity, "webhooks[0].matchConditions[0].expression: Invalid value")

	hook.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "checked", Expression: `object.metadata.name.startsWith("checked-")`},
		{Name: "by-admin", Expression: `request.userInfo.username == "admin"`},
	}
	h.mustDo(http.StatusCreated, "POST", vwcPath, "", validatingConfig(name, hook), nil)
	h.mustDo(http.StatusCreated, "POST", pods, "", podManifest("free", nil), nil)
	h.refused("POST", pods, podManifest("checked-one", nil), http.StatusForbidden, "checked and refused")
	if n := len(refuser.Requests()); n != 1 {
		t.Errorf("the webhook was called %d times, want once (for checked-one only)", n)
	}

	// A condition that fails to evaluate refuses the write under failurePolicy Fail.
	hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "label", Expression: `object.metadata.labels["absent"] == "x"`}}
	h.mustDo(http.StatusOK, "PUT", vwcPath+"/"+name, "", withVersion(validatingConfig(name, hook), h), nil)
	h.refused("POST", pods, podManifest("unlabelled", map[string]string{"app": "x"}), http.StatusForbidden, `pods "unlabelled" is forbidden:`)
}
