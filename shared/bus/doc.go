// Package bus is the seam between the apiserver's outbox, which publishes every
// stored change, and the components that react to changes: the message and event
// shapes, the Publisher and Consumer interfaces, and the routing table (keys and
// per-consumer binding patterns) that both sides must agree on.
package bus
