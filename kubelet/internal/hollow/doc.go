// Package hollow simulates many nodes in one process for scale tests: it registers Nodes,
// renews their Leases and plays their kubelets, reporting every pod bound to them Running
// without starting a container. It exercises the control plane, not a container runtime.
package hollow
