// Package tables turns served objects and lists into meta.k8s.io/v1 Tables with the columns
// Kubernetes prints, so `kubectl get` against minik8s looks the same as against Kubernetes.
// Each served kind's Printer is here (Pod, Service, ...); the kind's registration in the
// registry names it and registers it, so For renders each kind with its own columns.
package tables
