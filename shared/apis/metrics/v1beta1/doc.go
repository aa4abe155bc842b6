// Package v1beta1 holds the metrics.k8s.io/v1beta1 types the apiserver serves from the
// kubelets' stats: PodMetrics and NodeMetrics, in the wire form of Kubernetes' metrics API, so
// `kubectl top` (ours and the real one) and the HPA controller read them.
package v1beta1
