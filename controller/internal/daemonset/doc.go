// Package daemonset runs one pod of each DaemonSet on every node that suits it, and rolls
// those pods to a new template by the DaemonSet's update strategy, as Kubernetes' DaemonSet
// controller does.
package daemonset
