// Package workloads holds the small programs minik8s runs as test and demo workloads: the pod
// sandbox's pause process, HTTP servers for echo, load generation and files, and an in-cluster
// API client. Each builds to a static binary that images/ packs into a FROM scratch image,
// because the build machines have no image registry to pull from.
package workloads
