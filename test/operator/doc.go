// Package operator is an example operator for minik8s written with controller-runtime: the
// EchoApp custom resource (demo.minik8s.io/v1) runs minik8s/echo as a Deployment and a
// Service, with validating and mutating webhooks. It is the acceptance workload for custom
// resources and admission webhooks, and works the same on any Kubernetes.
package operator
