// Package nodestatus makes the kubelet's machine a Node of the cluster: it registers the Node
// (labels, taints, addresses, capacity, node info) from a node config file and the host, reads
// back the podCIDR the control plane assigns, renews the node's Lease in kube-node-lease, and
// keeps the Ready, MemoryPressure, DiskPressure and PIDPressure conditions current through the
// nodes/status subresource. A UsageReporter adds what the node's pods use (CPU rate, memory
// working set) as minik8s.io/usage-* annotations, for the scheduler's usage-aware strategies.
// Host facts come through the Host interface (LinuxHost reads /proc;
// FakeHost is for tests) and the API through NodeClient and LeaseClient, which the shared
// REST client satisfies.
package nodestatus
