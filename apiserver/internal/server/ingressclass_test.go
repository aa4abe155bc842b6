package server

import (
	"net/http"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressClasses are served cluster-scoped as NAME CONTROLLER PARAMETERS AGE, and a new
// Ingress naming no class is given the default one, as Kubernetes' DefaultIngressClass
// admission does; one naming a class keeps it.
func TestIngressClassDefaulted(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	classes := "/apis/networking.k8s.io/v1/ingressclasses"
	ingresses := "/apis/networking.k8s.io/v1/namespaces/" + ns + "/ingresses"
	ingress := func(name string, class *string) map[string]any {
		spec := map[string]any{"defaultBackend": map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"number": 80}}}}
		if class != nil {
			spec["ingressClassName"] = *class
		}
		return map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	class := func(name string, isDefault bool) map[string]any {
		md := map[string]any{"name": name}
		if isDefault {
			md["annotations"] = map[string]any{"ingressclass.kubernetes.io/is-default-class": "true"}
		}
		return map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": md,
			"spec": map[string]any{"controller": "minik8s.io/ingress"}}
	}

	var before networkingv1.Ingress
	h.mustDo(http.StatusCreated, "POST", ingresses, "", ingress("before", nil), &before)
	if before.Spec.IngressClassName != nil {
		t.Fatalf("no default class yet, got %q", *before.Spec.IngressClassName)
	}

	h.mustDo(http.StatusCreated, "POST", classes, "", class("other-"+ns, false), nil)
	h.mustDo(http.StatusCreated, "POST", classes, "", class("default-"+ns, true), nil)
	t.Cleanup(func() {
		h.do("DELETE", classes+"/other-"+ns, "", nil, nil)
		h.do("DELETE", classes+"/default-"+ns, "", nil, nil)
	})

	var got networkingv1.Ingress
	h.mustDo(http.StatusCreated, "POST", ingresses, "", ingress("after", nil), &got)
	if got.Spec.IngressClassName == nil || *got.Spec.IngressClassName != "default-"+ns {
		t.Fatalf("ingressClassName %v, want default-%s", got.Spec.IngressClassName, ns)
	}
	other := "other-" + ns
	h.mustDo(http.StatusCreated, "POST", ingresses, "", ingress("named", &other), &got)
	if got.Spec.IngressClassName == nil || *got.Spec.IngressClassName != other {
		t.Fatalf("ingressClassName %v, want %s", got.Spec.IngressClassName, other)
	}

	var tbl metav1.Table
	code, _ := h.do("GET", classes+"/default-"+ns, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if code != http.StatusOK || len(tbl.ColumnDefinitions) != 4 || tbl.ColumnDefinitions[1].Name != "Controller" ||
		len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != "minik8s.io/ingress" || tbl.Rows[0].Cells[2] != "<none>" {
		t.Fatalf("table %d %+v", code, tbl)
	}

	var st metav1.Status
	code, _ = h.do("POST", classes, "", map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
		"metadata": map[string]any{"name": "bad-" + ns}, "spec": map[string]any{"controller": "nginx"}}, &st)
	if code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "spec.controller" {
		t.Fatalf("bad controller: %d %+v", code, st)
	}
}
