// Package podautoscaler is the HorizontalPodAutoscaler controller (autoscaling/v2): it reads
// pods' resource usage from metrics.k8s.io, works out the replica count with Kubernetes'
// formula and scaling behavior (pure functions in replicas.go and behavior.go, applied by
// Decide), and sets it through the target's scale subresource.
package podautoscaler
