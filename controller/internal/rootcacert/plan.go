package rootcacert

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ConfigMap's name, key and description are Kubernetes', which in-cluster clients and
// the kubelet's projected volumes look for.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Plan is what one namespace needs: a ConfigMap to create, one to update, or neither.
type Plan struct {
	Create *corev1.ConfigMap
	Update *corev1.ConfigMap
}

// Decide is the plan for namespace ns (nil when it is gone), whose kube-root-ca.crt is current
// (nil when there is none), for the PEM bundle ca. A namespace being terminated gets nothing:
// it refuses new content. An existing ConfigMap gets its data reset and, when it lost it, the
// description back, keeping whatever else a user put on it; current is not modified.
func Decide(ns *corev1.Namespace, current *corev1.ConfigMap, ca []byte) Plan {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return Plan{}
	}
	data := map[string]string{DataKey: string(ca)}
	if current == nil {
		return Plan{Create: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: ConfigMapName,
				Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data: data,
		}}
	}
	if equality.Semantic.DeepEqual(current.Data, data) && current.Annotations[DescriptionAnnotation] != "" {
		return Plan{}
	}
	next := current.DeepCopy()
	next.Data = data
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[DescriptionAnnotation] = Description
	return Plan{Update: next}
}
