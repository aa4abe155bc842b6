package ingress

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// ControllerName is the spec.controller of the IngressClasses this controller implements.
const ControllerName = "minik8s.io/ingress-nginx"

// ClassAnnotation is the older way an Ingress names its class, which controllers still honour.
const ClassAnnotation = "kubernetes.io/ingress.class"

// Serves reports whether the controller serving class serves ing, given the IngressClasses by
// name. As ingress-nginx decides: an ingressClassName must name an IngressClass whose
// spec.controller is ours (a class of another controller, or none of that name, is not ours);
// without one, the kubernetes.io/ingress.class annotation must be class. An Ingress naming no
// class at all is served only while our IngressClass is the cluster's default (ingress-nginx
// asks for a flag instead, --watch-ingress-without-class): the apiserver gives new Ingresses
// the default class anyway, so this covers the ones made before there was one.
func Serves(ing *networkingv1.Ingress, class string, classes map[string]*networkingv1.IngressClass) bool {
	if n := ing.Spec.IngressClassName; n != nil {
		ic, ok := classes[*n]
		return ok && ic.Spec.Controller == ControllerName
	}
	if a, ok := ing.Annotations[ClassAnnotation]; ok {
		return a == class
	}
	ic, ok := classes[class]
	return ok && ic.Spec.Controller == ControllerName && IsDefault(ic)
}

// IsDefault reports whether ic is marked as the cluster's default IngressClass.
func IsDefault(ic *networkingv1.IngressClass) bool {
	return ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
}

// ClassToMake is the IngressClass to create at start for class: named class, implemented by
// this controller, and marked default when no other class is, as ingress-nginx's chart and the
// default StorageClass do. nil when an IngressClass of that name exists, whoever's it is.
func ClassToMake(class string, existing []*networkingv1.IngressClass) *networkingv1.IngressClass {
	if slices.ContainsFunc(existing, func(ic *networkingv1.IngressClass) bool { return ic.Name == class }) {
		return nil
	}
	ic := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec:       networkingv1.IngressClassSpec{Controller: ControllerName},
	}
	if !slices.ContainsFunc(existing, IsDefault) {
		ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
	}
	return ic
}
