// Package queue holds the pods waiting for a node: new pods are tried at once, a pod that fit
// nowhere is retried with a per-pod exponential back-off, and any change that may make room
// (a node added or changed, a pod deleted) brings the waiting pods back early.
package queue
