package validation

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/defaults"
)

func newIngressClass() *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "minik8s"},
		Spec: networkingv1.IngressClassSpec{Controller: "minik8s.io/ingress",
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr("example.com"), Kind: "Params", Name: "p"}}}
}

// IngressClasses are checked as Kubernetes' ValidateIngressClass checks them.
func TestIngressClassValidation(t *testing.T) {
	params := func(ic *networkingv1.IngressClass) *networkingv1.IngressClassParametersReference {
		return ic.Spec.Parameters
	}
	runCreate(t, IngressClass, defaults.IngressClass, newIngressClass, []createCase[*networkingv1.IngressClass]{
		{name: "valid"},
		{name: "controller required", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }, want: []problem{req("spec.controller")}},
		{name: "controller not domain-prefixed", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "ingress" },
			want: []problem{inv("spec.controller")}},
		{name: "controller too long", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "minik8s.io/" + strings.Repeat("a", 250) },
			want: []problem{long("spec.controller")}},
		{name: "kind required", mutate: func(ic *networkingv1.IngressClass) { params(ic).Kind = "" }, want: []problem{req("spec.parameters.kind")}},
		{name: "name a path segment", mutate: func(ic *networkingv1.IngressClass) { params(ic).Name = "a/b" }, want: []problem{inv("spec.parameters.name")}},
		{name: "apiGroup", mutate: func(ic *networkingv1.IngressClass) { params(ic).APIGroup = ptr("Not_A_Group") }, want: []problem{inv("spec.parameters.apiGroup")}},
		{name: "scope", mutate: func(ic *networkingv1.IngressClass) { params(ic).Scope = ptr("Everywhere") }, want: []problem{nsup("spec.parameters.scope")}},
		{name: "namespace scope needs a namespace", mutate: func(ic *networkingv1.IngressClass) { params(ic).Scope = ptr("Namespace") },
			want: []problem{req("spec.parameters.namespace")}},
		{name: "cluster scope has no namespace", mutate: func(ic *networkingv1.IngressClass) { params(ic).Namespace = ptr("default") },
			want: []problem{forb("spec.parameters.namespace")}},
	})
	old := newIngressClass()
	n := newIngressClass()
	n.Spec.Controller = "example.com/other"
	defaults.IngressClass(old)
	defaults.IngressClass(n)
	check(t, IngressClass.ValidateUpdate(n, old), []problem{inv("spec.controller")})
}
