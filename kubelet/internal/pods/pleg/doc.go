// Package pleg is the pod lifecycle event generator: it relists the runtime's containers
// periodically, diffs each relist against the previous one and reports container lifecycle
// events by pod, so pod workers react to containers that started, died or vanished.
package pleg
