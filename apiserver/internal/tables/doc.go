// Package tables turns served objects and lists into meta.k8s.io/v1 Tables with the columns
// Kubernetes prints, so `kubectl get` against minik8s looks the same as against Kubernetes.
package tables
