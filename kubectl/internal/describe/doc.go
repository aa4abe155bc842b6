// Package describe writes the readable multi-section description of `kubectl describe`:
// dedicated layouts for pods, deployments, services and nodes, a generic one for the rest, and
// the object's events at the end.
package describe
