// Package app wires the scheduler process on the component manager: the bus-fed caches of
// pods, nodes, claims and volumes, the scheduling loop, and the leader gate that lets it bind
// only while this process leads and has caught up.
package app
