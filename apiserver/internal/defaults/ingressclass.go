package defaults

import networkingv1 "k8s.io/api/networking/v1"

// IngressClass sets what Kubernetes defaults on an IngressClass: parameters without a scope
// are cluster-scoped.
func IngressClass(ic *networkingv1.IngressClass) {
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		scope := networkingv1.IngressClassParametersReferenceScopeCluster
		p.Scope = &scope
	}
}
