// Package noderestriction is Kubernetes' NodeRestriction admission: it limits what a
// kubelet (user system:node:<name> in group system:nodes) may write to what concerns its
// own node. A node may modify only its own Node, without changing its taints or setting
// labels reserved to the cluster; only update the status of, delete and evict pods bound to
// it; create no pods; ask tokens only for its pods; and touch only its own Lease. The
// checks are a pure function of the request, its objects and a pod lookup.
package noderestriction
