// Package rbac authorizes requests by Role, ClusterRole, RoleBinding and ClusterRoleBinding
// (rbac.authorization.k8s.io/v1) exactly as Kubernetes' RBAC authorizer does, lists a
// user's rules for SelfSubjectRulesReview, and refuses a role or binding that grants more
// than its author holds. It reads policy through small lister interfaces, so the apiserver
// can back them with informer caches rather than a storage read per request.
package rbac
