package server

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every 404 Status carries details, as Kubernetes' do: the object's name, group and resource
// when one is named, and empty details otherwise (kubectl debug reads Details.Name of a 404
// without checking for nil).
func TestNotFoundCarriesDetails(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	cases := []struct {
		name, path string
		want       metav1.StatusDetails
	}{
		{"missing object", "/apis/apps/v1/namespaces/" + ns + "/deployments/nope", metav1.StatusDetails{Group: "apps", Kind: "deployments", Name: "nope"}},
		{"unknown resource", "/api/v1/namespaces/" + ns + "/nothings", metav1.StatusDetails{}},
		{"unknown subresource", "/api/v1/namespaces/" + ns + "/pods/p/nothing", metav1.StatusDetails{}},
		{"unknown group", "/apis/nothing.example.com/v1", metav1.StatusDetails{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st metav1.Status
			code, _ := h.do("GET", tc.path, "", nil, &st)
			if code != http.StatusNotFound || st.Reason != metav1.StatusReasonNotFound {
				t.Fatalf("GET %s: %d %q", tc.path, code, st.Reason)
			}
			if st.Details == nil {
				t.Fatalf("GET %s: 404 without details: %+v", tc.path, st)
			}
			if d := st.Details; d.Group != tc.want.Group || d.Kind != tc.want.Kind || d.Name != tc.want.Name {
				t.Fatalf("GET %s: details %+v, want %+v", tc.path, *d, tc.want)
			}
		})
	}
}
