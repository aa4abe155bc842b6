// Package replicaset is the ReplicaSet controller: it keeps spec.replicas running pods that
// match a ReplicaSet's selector, owned through a controller reference; adopts matching orphans
// and releases pods whose labels stopped matching; creates in slow-start batches and deletes
// in Kubernetes' order; and reports replicas, readiness and availability in the status. What to
// do is decided by pure functions (plan.go, rank.go); controller.go applies it. The controller
// runs over any kind its View shows as ReplicaSets: controller/internal/replication runs it
// over ReplicationControllers.
package replicaset
