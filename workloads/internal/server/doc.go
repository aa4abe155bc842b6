// Package server runs the workloads' HTTP handlers: listen on $PORT, log every request to stdout
// (what kubectl logs shows) and stop gracefully when the pod is told to terminate.
package server
