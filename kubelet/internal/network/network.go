package network

import "context"

// PortMapping publishes a container port on the node (a pod's hostPort).
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // "tcp", "udp" or "sctp"
	HostIP        string
}

// Pod identifies one pod sandbox to the network.
type Pod struct {
	// ID is the sandbox container's id: the CNI container id.
	ID        string
	Namespace string
	Name      string
	UID       string
	// NetNS is the sandbox's network namespace path.
	NetNS string
	Ports []PortMapping
}

// Network attaches pods to the node's pod network.
type Network interface {
	// SetUp attaches the pod and returns its IP address. It is idempotent for the same ID.
	SetUp(ctx context.Context, pod Pod) (ip string, err error)
	// TearDown detaches the pod and releases its address; tearing down an unknown or already
	// detached pod is not an error (the netns may be gone).
	TearDown(ctx context.Context, pod Pod) error
}
