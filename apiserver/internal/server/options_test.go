package server

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Query parameters of writes are read and checked as Kubernetes reads them, in any spelling of
// a boolean; what does not parse is a 400, what does not go together a 422.
func TestWriteQueryParameters(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	cases := []struct {
		name, method, query string
		code                int
		reason              metav1.StatusReason
	}{
		{"dryRun create", "POST", "?dryRun=All", 201, ""},
		{"unknown dryRun", "POST", "?dryRun=Some", 422, metav1.StatusReasonInvalid},
		{"unknown fieldValidation", "POST", "?fieldValidation=Loose", 422, metav1.StatusReasonInvalid},
		{"fieldManager too long", "POST", "?fieldManager=" + strings.Repeat("m", 200), 422, metav1.StatusReasonInvalid},
		{"force on a merge patch", "PATCH", "/c?force=True", 422, metav1.StatusReasonInvalid},
		{"propagationPolicy unknown", "DELETE", "/c?propagationPolicy=Sometimes", 422, metav1.StatusReasonInvalid},
		{"orphanDependents with propagationPolicy", "DELETE", "/c?orphanDependents=true&propagationPolicy=Background", 422, metav1.StatusReasonInvalid},
		{"gracePeriodSeconds not a number", "DELETE", "/c?gracePeriodSeconds=soon", 400, metav1.StatusReasonBadRequest},
		{"dryRun delete", "DELETE", "/c?dryRun=All&gracePeriodSeconds=0", 200, ""},
	}
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("c", nil), nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			ctype := ""
			switch tc.method {
			case "POST":
				body = configMap("new-"+strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")), nil)
			case "PATCH":
				body, ctype = `{"data":{"x":"y"}}`, "application/merge-patch+json"
			}
			var st metav1.Status
			code, _ := h.do(tc.method, base+tc.query, ctype, body, &st)
			if code != tc.code || (tc.reason != "" && st.Reason != tc.reason) {
				t.Fatalf("%d %s (%s), want %d %s", code, st.Reason, st.Message, tc.code, tc.reason)
			}
		})
	}
	// Dry runs left everything as it was.
	var list struct {
		Items []metav1.ObjectMeta `json:"items"`
	}
	h.mustDo(http.StatusOK, "GET", base, "", nil, &list)
	if len(list.Items) != 1 {
		t.Fatalf("%d configmaps after dry runs, want 1", len(list.Items))
	}
	// pretty=True indents, as does any true spelling.
	code, _, data := h.raw("GET", base+"/c?pretty=True", "", "", nil)
	if code != 200 || !strings.Contains(string(data), "\n  \"metadata\"") {
		t.Fatalf("pretty=True answered %d %q", code, data)
	}
}
