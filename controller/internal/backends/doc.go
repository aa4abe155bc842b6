// Package backends says which pods back a Service and on which ports: the rules Kubernetes'
// Endpoints and EndpointSlice controllers share (which pods count, hostnames, named target
// ports), and the mapping from a pod to the Services that select it.
package backends
