package ingress

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"minik8s.io/shared/podstatus"
)

// ConfigAnnotation records on an nginx pod which configuration it runs: "<hash> <container
// id>". A restarted container (a new id) starts from the image's configuration again, so it
// is delivered again.
const ConfigAnnotation = "ingress.minik8s.io/configuration"

// PodPlan is what to do about the nginx pods.
type PodPlan struct {
	// Create is how many pods to add.
	Create int
	// Delete are pods to remove: finished ones, and active ones beyond the wanted number
	// (unscheduled, then not ready, then the youngest first).
	Delete []*corev1.Pod
}

// PlanPods keeps replicas active nginx pods. pods are the managed pods the cache holds;
// pending counts pods created but not in the cache yet, which count as active (so a slow cache
// never causes a second creation).
func PlanPods(pods []*corev1.Pod, pending, replicas int) PodPlan {
	var p PodPlan
	var active []*corev1.Pod
	for _, pod := range pods {
		switch {
		case pod.DeletionTimestamp != nil:
			// Going: a replacement is made now, as a ReplicaSet does.
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			p.Delete = append(p.Delete, pod)
		default:
			active = append(active, pod)
		}
	}
	if n := len(active) + pending; n < replicas {
		p.Create = replicas - n
	} else if extra := min(n-replicas, len(active)); extra > 0 {
		slices.SortFunc(active, func(a, b *corev1.Pod) int {
			return cmp.Or(
				cmp.Compare(rank(a), rank(b)),
				b.CreationTimestamp.Compare(a.CreationTimestamp.Time),
				cmp.Compare(a.Name, b.Name))
		})
		p.Delete = append(p.Delete, active[:extra]...)
	}
	return p
}

// rank orders pods by how little removing them costs: unscheduled, then not ready, then the
// rest.
func rank(p *corev1.Pod) int {
	switch {
	case p.Spec.NodeName == "":
		return 0
	case !podstatus.Ready(p):
		return 1
	default:
		return 2
	}
}

// Delivery is one pod to send the configuration to.
type Delivery struct {
	Pod         *corev1.Pod
	ContainerID string
}

// PlanDeliveries lists the pods whose running nginx container does not run the configuration
// of hash yet. A pod whose container is not running cannot take it; it is delivered to once it
// runs.
func PlanDeliveries(pods []*corev1.Pod, container, hash string) []Delivery {
	var out []Delivery
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != container || cs.State.Running == nil || cs.ContainerID == "" {
				continue
			}
			if p.Annotations[ConfigAnnotation] != hash+" "+cs.ContainerID {
				out = append(out, Delivery{Pod: p, ContainerID: cs.ContainerID})
			}
		}
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(a.Pod.Name, b.Pod.Name) })
	return out
}

// StatusUpdate returns a copy of ing whose status names ip as its load balancer, or nil when
// it already does.
func StatusUpdate(ing *networkingv1.Ingress, ip string) *networkingv1.Ingress {
	var want []networkingv1.IngressLoadBalancerIngress
	if ip != "" {
		want = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	}
	if apiequality.Semantic.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	out := ing.DeepCopy()
	out.Status.LoadBalancer.Ingress = want
	return out
}

// OfClass reports whether ing is this controller's: its ingressClassName (or the older
// kubernetes.io/ingress.class annotation) names class, or it names none.
func OfClass(ing *networkingv1.Ingress, class string) bool {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName == class
	}
	if a, ok := ing.Annotations["kubernetes.io/ingress.class"]; ok {
		return a == class
	}
	return true
}
