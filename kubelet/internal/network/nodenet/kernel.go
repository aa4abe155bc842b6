package nodenet

// Kernel is what the reconciler needs of the node's network stack. Netlink is the real one;
// package fake has one in memory, and package nodenettest is the contract both keep.
type Kernel interface {
	// Routes lists the IPv4 routes of the main table marked RouteProtocol.
	Routes() ([]Route, error)
	// ReplaceRoute adds a route marked RouteProtocol, or changes the one to the same
	// destination. It fails, changing nothing, for a gateway outside the node's connected
	// subnets (unless the route is on-link) and for a device that does not exist.
	ReplaceRoute(r Route) error
	// DeleteRoute removes a route; one already gone is not an error.
	DeleteRoute(r Route) error

	// EnsureVTEP creates the VXLAN device or corrects it (VNI, port, local address and parent,
	// MAC, MTU, its one address) and brings it up. What a live device cannot change (VNI,
	// port, local address) makes it again, without its entries and the routes through it. A
	// new MAC or address keeps the device and its forwarding entries, but the kernel flushes
	// the neighbours, and with a new address the routes through the device too: read them
	// after it. It fails when no interface holds v.Local.
	EnsureVTEP(v VTEP) error
	// DeleteVTEP removes the VXLAN device named name, if there is one, with its entries and
	// the routes through it.
	DeleteVTEP(name string) error
	// VTEPEntries lists the permanent neighbours and forwarding entries on the device (the
	// kernel's own entries excluded); a missing device has none.
	VTEPEntries(dev string) ([]Neighbor, []FDB, error)
	// SetNeighbor adds a neighbour or changes the MAC of the one with its address; it fails
	// when the device does not exist. DeleteNeighbor of one already gone is not an error.
	SetNeighbor(dev string, n Neighbor) error
	DeleteNeighbor(dev string, n Neighbor) error
	// SetFDB adds a forwarding entry; it fails when the device does not exist. DeleteFDB of
	// one already gone is not an error.
	SetFDB(dev string, f FDB) error
	DeleteFDB(dev string, f FDB) error
}
