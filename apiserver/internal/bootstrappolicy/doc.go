// Package bootstrappolicy is the RBAC policy an apiserver ensures at start: Kubernetes'
// default ClusterRoles and bindings (cluster-admin, admin, edit, view and the system: roles),
// one least-privilege role per minik8s component, the node rules the Node authorizer applies,
// and the reconciliation that adds what is missing to stored roles and bindings without
// taking away what administrators added.
//
// Reconciliation adds and never takes away: an administrator's extra rules, subjects, labels
// and annotations stay, and a stored value of a label or annotation wins over the default. An
// object annotated rbac.authorization.kubernetes.io/autoupdate: "false" is left as it is.
//
// The component roles grant what each component's code calls and nothing else; roles.go says,
// rule by rule, which part makes each call:
//
//	component           identity                             roles
//	scheduler           user system:kube-scheduler           system:kube-scheduler; Role system::leader-locking-kube-scheduler in kube-system
//	controller-manager  user system:kube-controller-manager  system:kube-controller-manager; Role system::leader-locking-kube-controller-manager in kube-system
//	kubeproxy           user system:kube-proxy               system:node-proxier
//	serverless          user system:serverless               system:serverless
//	kubelet             system:node:<name> in system:nodes   NodeRules, applied by the Node authorizer
package bootstrappolicy
