// Package access is the apiserver's authorization as it runs: informer caches over its own
// registry of the RBAC objects and of the pods and volumes the Node authorizer follows, and
// the chain Kubernetes runs (system:masters, then the Node authorizer, then RBAC), so a
// decision reads memory, never etcd.
package access
