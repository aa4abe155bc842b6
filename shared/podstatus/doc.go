// Package podstatus reads a pod's status the way every component must read it alike: whether
// it is ready (its Ready condition), since when, and whether it has been ready long enough to
// count as available.
package podstatus
