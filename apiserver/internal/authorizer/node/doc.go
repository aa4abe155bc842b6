// Package node is Kubernetes' Node authorizer: it lets a kubelet (user system:node:<name>
// in group system:nodes) read only the Secrets, ConfigMaps, PersistentVolumeClaims and
// PersistentVolumes that pods bound to its node use, ask tokens only for those pods'
// service accounts, touch only its own Node and Lease, and do everything else nodes may do
// by a fixed set of rules. It reads pods and volumes through a small Graph interface, so
// the apiserver can back it with informer caches.
package node
