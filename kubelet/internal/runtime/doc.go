// Package runtime is the kubelet's seam to its container runtime: containers with labels, the
// namespaces they share, resource limits, logs, stats and exec. dockerruntime implements it on
// the Docker Engine API; fake implements it in memory for unit tests.
package runtime
