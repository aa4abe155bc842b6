package registry

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GCPolicy is what happens to an object's dependents when it is deleted without a
// propagationPolicy (or orphanDependents) saying otherwise, as Kubernetes' registries define
// it per kind and version.
type GCPolicy int

const (
	// DeleteDependents: the object goes at once and the garbage collector deletes its
	// dependents in the background. Most kinds.
	DeleteDependents GCPolicy = iota
	// OrphanDependents: the object gets the orphan finalizer, and the collector removes the
	// owner references to it before it goes. batch/v1 Jobs, for compatibility.
	OrphanDependents
)

// gcFinalizers works out the finalizers a deletion with opts leaves on an object that has
// finalizers, as Kubernetes' deletionFinalizersForGarbageCollection does: an explicit
// orphanDependents or propagationPolicy wins, then a finalizer already there (a second
// delete keeps the first one's choice), then the kind's default. Orphan adds
// metav1.FinalizerOrphanDependents, Foreground metav1.FinalizerDeleteDependents; each
// removes the other. It reports whether the finalizers change.
func gcFinalizers(policy GCPolicy, finalizers []string, opts *metav1.DeleteOptions) (bool, []string) {
	orphan, foreground := gcChoice(policy, finalizers, opts)
	out := make([]string, 0, len(finalizers)+1)
	for _, f := range finalizers {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if sameSet(out, finalizers) {
		return false, finalizers
	}
	return true, out
}

// gcChoice is whether dependents are orphaned, or deleted in the foreground, for a deletion
// with opts of an object with finalizers and the kind's default policy.
func gcChoice(policy GCPolicy, finalizers []string, opts *metav1.DeleteOptions) (orphan, foreground bool) {
	if opts != nil && opts.OrphanDependents != nil { //nolint:staticcheck // the deprecated field is still served
		return *opts.OrphanDependents, false //nolint:staticcheck
	}
	if opts != nil && opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationOrphan:
			return true, false
		case metav1.DeletePropagationForeground:
			return false, true
		case metav1.DeletePropagationBackground:
			return false, false
		}
	}
	for _, f := range finalizers {
		switch f {
		case metav1.FinalizerOrphanDependents:
			return true, false
		case metav1.FinalizerDeleteDependents:
			return false, true
		}
	}
	return policy == OrphanDependents, false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}
