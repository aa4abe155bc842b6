// Package spec maps a pod and its containers to runtime container configurations: the labels
// that let a restarted kubelet recognise its containers, the spec hash that decides whether a
// running container is still what the pod asks for, names, env (with the Service variables),
// resources and volume mounts; and it writes the pod's volumes on the host, configMap,
// secret, downwardAPI and projected ones atomically (see package atomicdir). Everything else
// is pure.
package spec
