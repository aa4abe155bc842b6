// Package statefulset keeps each StatefulSet's pods: one per ordinal with a stable name,
// network identity and claims, created and removed in order, and updated from the highest
// ordinal down to the partition.
package statefulset
