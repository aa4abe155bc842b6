// Package spec maps a pod and its containers to runtime container configurations: the labels
// that let a restarted kubelet recognise its containers, the spec hash that decides whether a
// running container is still what the pod asks for, names, env, resources and volume mounts.
// Everything here is pure except volume directory creation.
package spec
