// Package nodelifecycle notices nodes whose kubelet went silent and acts for it: a node whose
// Lease is older than the grace period is marked Ready=Unknown and tainted unreachable, its
// pods are marked not ready and, once their toleration of the taint runs out, deleted so their
// controllers replace them elsewhere; a node that renews again loses the taints, and the pods of
// a deleted Node are force-deleted because no kubelet is left to finalize them.
package nodelifecycle
