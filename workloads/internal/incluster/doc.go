// Package incluster is what the incluster image does each round: list pods with the pod's own
// ServiceAccount token, try to list secrets (which RBAC should refuse), and report the token's
// lifetime claims and the KUBERNETES_* environment, so tests can see from a pod's log that
// in-cluster API access and its authorization work as on Kubernetes.
package incluster
