// Package cache is the scheduler's picture of the cluster: every node with what its pods
// request, counting pods the scheduler has assumed onto a node before the API confirms the
// binding, so two pods never take the same last slot while a bind is in flight.
package cache
