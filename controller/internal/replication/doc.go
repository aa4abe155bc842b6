// Package replication is the ReplicationController controller. A v1 ReplicationController is a
// ReplicaSet whose selector is an equality one, so, as in Kubernetes, this is the ReplicaSet
// controller (controller/internal/replicaset) run over ReplicationControllers seen as
// ReplicaSets: the same claim, decision, slow start, expectations and status, with the pods'
// controller references and the events naming the ReplicationController.
package replication
