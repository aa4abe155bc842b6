package nodenet

// Kernel is what the reconciler needs of the node's network stack. Netlink is the real one,
// FakeKernel the in-memory one.
type Kernel interface {
	// Routes lists the IPv4 routes of the main table marked RouteProtocol.
	Routes() ([]Route, error)
	// ReplaceRoute adds a route marked RouteProtocol, or changes the one to the same
	// destination.
	ReplaceRoute(r Route) error
	// DeleteRoute removes a route; one already gone is not an error.
	DeleteRoute(r Route) error

	// EnsureVTEP creates the VXLAN device or corrects it (VNI, port, local address and parent,
	// MAC, MTU, its one address) and brings it up.
	EnsureVTEP(v VTEP) error
	// DeleteVTEP removes the VXLAN device named name, if there is one (with its entries).
	DeleteVTEP(name string) error
	// VTEPEntries lists the permanent neighbours and forwarding entries on the device (the
	// kernel's own entries excluded); a missing device has none.
	VTEPEntries(dev string) ([]Neighbor, []FDB, error)
	SetNeighbor(dev string, n Neighbor) error
	DeleteNeighbor(dev string, n Neighbor) error
	SetFDB(dev string, f FDB) error
	DeleteFDB(dev string, f FDB) error
}
