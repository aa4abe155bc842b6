package registry

import (
	"context"
	"sort"

	networkingv1 "k8s.io/api/networking/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/scheme"
)

// DefaultIngressClassAnnotation marks the IngressClass that Ingresses naming none are given.
const DefaultIngressClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

var _ = register(Kind[*networkingv1.IngressClass]{
	Resource:   served("ingressclasses"),
	Default:    defaults.IngressClass,
	Validation: validation.IngressClass,
	Table:      tables.IngressClass,
})

// admitDefaultIngressClass gives a new Ingress that names no class the default IngressClass,
// as Kubernetes' DefaultIngressClass admission plugin: the one annotated
// is-default-class=true, the newest (then the first by name) when several are.
func admitDefaultIngressClass(ctx context.Context, r *Registry, ing *networkingv1.Ingress) error {
	if ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations["kubernetes.io/ingress.class"]; ok {
		return nil
	}
	res, err := scheme.Lookup("ingressclasses")
	if err != nil {
		return err
	}
	list, err := r.List(ctx, Key{Resource: res}, ListOptions{})
	if err != nil {
		return err
	}
	var defaults []*networkingv1.IngressClass
	for _, obj := range list.Items {
		if ic, ok := obj.(*networkingv1.IngressClass); ok && ic.Annotations[DefaultIngressClassAnnotation] == "true" {
			defaults = append(defaults, ic)
		}
	}
	if name := DefaultIngressClass(defaults); name != "" {
		ing.Spec.IngressClassName = &name
	}
	return nil
}

// DefaultIngressClass picks among the classes marked default: the newest, then the first by
// name, as Kubernetes does when several are marked; "" when none are.
func DefaultIngressClass(marked []*networkingv1.IngressClass) string {
	if len(marked) == 0 {
		return ""
	}
	sort.Slice(marked, func(i, j int) bool {
		ti, tj := marked[i].CreationTimestamp, marked[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return marked[i].Name < marked[j].Name
	})
	return marked[0].Name
}
