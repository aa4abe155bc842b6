// Package status computes a pod's status from its spec and the containers the runtime reports
// (phase, conditions, container states, IPs, QoS class), and writes it through the API only
// when it changed.
package status
