package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var serviceResources = []corev1.ResourceName{
	"count/services", corev1.ResourceServices, corev1.ResourceServicesLoadBalancers, corev1.ResourceServicesNodePorts,
}

// services count themselves, their node ports (NodePort and LoadBalancer Services) and load
// balancers.
type services struct{}

func (services) GroupResource() schema.GroupResource {
	return schema.GroupResource{Resource: "services"}
}
func (services) ChargesUpdates() bool { return true }

func (services) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	return Intersection(names, serviceResources)
}

func (services) MatchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}

func (services) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

func (services) Usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("quota: expected a service, got %T", obj)
	}
	out := corev1.ResourceList{
		"count/services":                     one(),
		corev1.ResourceServices:              one(),
		corev1.ResourceServicesLoadBalancers: zero(),
		corev1.ResourceServicesNodePorts:     zero(),
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			// Without allocated node ports, only those asked for by number count.
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one()
	}
	return out, nil
}
