package server

import (
	"net/http"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkPolicies are served and stored with Kubernetes' defaults and validation, shown as
// NAME POD-SELECTOR AGE, and advertised with their short name.
func TestNetworkPolicyServed(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	path := "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies"

	var created networkingv1.NetworkPolicy
	h.mustDo(http.StatusCreated, "POST", path, "", map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"ingress":     []any{map[string]any{"ports": []any{map[string]any{"port": 80}}}},
		},
	}, &created)
	if len(created.Spec.PolicyTypes) != 1 || created.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("policyTypes %v", created.Spec.PolicyTypes)
	}
	if p := created.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != "TCP" {
		t.Fatalf("protocol %v", p)
	}

	var st metav1.Status
	code, _ := h.do("POST", path, "", map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": "bad"},
		"spec":     map[string]any{"ingress": []any{map[string]any{"from": []any{map[string]any{}}}}},
	}, &st)
	if code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.ingress[0].from[0]" {
		t.Fatalf("empty peer: %d %+v", code, st)
	}

	var tbl metav1.Table
	h.mustDo(http.StatusOK, "GET", path, "", nil, nil)
	code, _ = h.do("GET", path, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if code != http.StatusOK || len(tbl.ColumnDefinitions) != 3 || tbl.ColumnDefinitions[1].Name != "Pod-Selector" ||
		len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != "app=web" {
		t.Fatalf("table %d %+v", code, tbl)
	}

	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/apis/networking.k8s.io/v1", "", nil, &list)
	found := false
	for _, r := range list.APIResources {
		if r.Name == "networkpolicies" && r.Kind == "NetworkPolicy" && len(r.ShortNames) == 1 && r.ShortNames[0] == "netpol" {
			found = true
		}
	}
	if !found {
		t.Fatalf("networkpolicies not advertised: %+v", list.APIResources)
	}
}
