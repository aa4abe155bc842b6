package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// OwnerState is what an owner reference of a dependent points at.
type OwnerState int

const (
	// OwnerExists: the owner is there (same uid) and is not deleting its dependents.
	OwnerExists OwnerState = iota
	// OwnerAbsent: no object of that name, or one with another uid (the owner was deleted
	// and its name reused).
	OwnerAbsent
	// OwnerDeletingDependents: the owner is being deleted in the foreground and waits for
	// its dependents.
	OwnerDeletingDependents
	// OwnerUnresolvable: the reference cannot be followed (a kind the API does not serve, or a
	// cluster-scoped dependent naming a namespaced owner); the dependent is left alone, as
	// Kubernetes leaves it.
	OwnerUnresolvable
)

// Op is what the collector does to a dependent.
type Op int

const (
	Keep Op = iota
	// RemoveOwners patches the dependent's owner references to the owners in Action.Owners
	// away: it has a live owner besides them.
	RemoveOwners
	// Delete deletes the dependent with Action.Policy, first making its own owner references
	// non-blocking when Action.Unblock is set.
	Delete
)

// Action is the decision about one dependent.
type Action struct {
	Op     Op
	Owners []types.UID
	Policy metav1.DeletionPropagation
	// Unblock: the dependent has a dependent of its own that waits for its dependents, so
	// blocking owner references could form a cycle of waits; Kubernetes clears them.
	Unblock bool
}

// Dependent is what the decision needs to know of an object with owners.
type Dependent struct {
	OwnerReferences []metav1.OwnerReference
	Finalizers      []string
	Deleting        bool
	// HasDependents: some object names this one as owner. DependentDeletingDependents: one
	// of them is itself being deleted in the foreground.
	HasDependents               bool
	DependentDeletingDependents bool
}

// DecideDependent is Kubernetes' attemptToDeleteItem as a pure function: owners holds the
// state of each owner reference by uid. An object with a live owner keeps it (and loses the
// references to absent owners and to owners deleting their dependents, which would wait for
// it otherwise); an object whose owners are all gone is deleted, in the foreground when one
// of them waits for it and it has dependents itself (so the wait covers them too), otherwise
// by its own finalizers' policy, background by default.
func DecideDependent(d Dependent, owners map[types.UID]OwnerState) Action {
	if d.Deleting || len(d.OwnerReferences) == 0 {
		return Action{Op: Keep}
	}
	var solid, dangling, waiting []types.UID
	for _, ref := range d.OwnerReferences {
		switch owners[ref.UID] {
		case OwnerExists:
			solid = append(solid, ref.UID)
		case OwnerAbsent:
			dangling = append(dangling, ref.UID)
		case OwnerDeletingDependents:
			waiting = append(waiting, ref.UID)
		default:
			return Action{Op: Keep}
		}
	}
	switch {
	case len(solid) > 0:
		if stale := append(dangling, waiting...); len(stale) > 0 {
			return Action{Op: RemoveOwners, Owners: stale}
		}
		return Action{Op: Keep}
	case len(waiting) > 0 && d.HasDependents:
		return Action{Op: Delete, Policy: metav1.DeletePropagationForeground, Unblock: d.DependentDeletingDependents}
	case slices.Contains(d.Finalizers, metav1.FinalizerOrphanDependents):
		return Action{Op: Delete, Policy: metav1.DeletePropagationOrphan}
	case slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents):
		return Action{Op: Delete, Policy: metav1.DeletePropagationForeground}
	default:
		return Action{Op: Delete, Policy: metav1.DeletePropagationBackground}
	}
}

// Blocking reports whether a dependent keeps owner from going in a foreground deletion: its
// reference to owner has blockOwnerDeletion set and it still exists (a dependent terminating
// gracefully still blocks).
func Blocking(owner types.UID, refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// WithoutOwners returns refs without the references to the given owners.
func WithoutOwners(refs []metav1.OwnerReference, owners ...types.UID) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if !slices.Contains(owners, r.UID) {
			out = append(out, r)
		}
	}
	return out
}

// Unblocked returns refs with blockOwnerDeletion cleared.
func Unblocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, len(refs))
	for i, r := range refs {
		r.BlockOwnerDeletion = nil
		out[i] = r
	}
	return out
}

// WithoutFinalizer returns finalizers without f.
func WithoutFinalizer(finalizers []string, f string) []string {
	out := make([]string, 0, len(finalizers))
	for _, x := range finalizers {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}

// OwnerState of an existing owner: deleting its dependents when it has deletionTimestamp and
// the foregroundDeletion finalizer.
func stateOf(m metav1.Object) OwnerState {
	if m.GetDeletionTimestamp() != nil && slices.Contains(m.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return OwnerDeletingDependents
	}
	return OwnerExists
}
