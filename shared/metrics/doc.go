// Package metrics gives the scheduler and the controller-manager their Prometheus metrics:
// work queues, reconciles, informers and the bus, under names shared by both, and the HTTP
// server of /metrics and /healthz that kubeproxy uses too.
package metrics
