// Package dockerruntime implements the kubelet's runtime.Runtime on the Docker Engine API,
// negotiating the API version down to the daemon's so one binary works with old and new engines
// and with a per-node dockerd socket.
package dockerruntime
