// Package app wires the scheduler process: REST client, bus-fed informers for pods and nodes,
// the event recorder, leader election and the scheduling loop, run together in a run group.
package app
