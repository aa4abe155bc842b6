// Package disruption keeps PodDisruptionBudgets' status as Kubernetes' disruption controller
// does: how many of the selected pods are healthy, how many must be, how many are expected
// (from the pods' controllers' replicas), and so how many disruptions (evictions) are allowed.
package disruption
