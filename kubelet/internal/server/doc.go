// Package server is the kubelet's HTTPS endpoint: container logs for `kubectl logs`, exec,
// attach and port-forward sessions (all proxied by the apiserver), a stats summary of pods and
// containers, Prometheus metrics and a health check.
// Callers authenticate with a bearer token the apiserver accepts.
package server
