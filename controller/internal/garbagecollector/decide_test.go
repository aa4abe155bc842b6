package garbagecollector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ref(uid string, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "o-" + uid, UID: types.UID(uid)}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

func TestDecideDependent(t *testing.T) {
	refs := func(uids ...string) []metav1.OwnerReference {
		var out []metav1.OwnerReference
		for _, u := range uids {
			out = append(out, ref(u, false))
		}
		return out
	}
	cases := []struct {
		name   string
		d      Dependent
		owners map[types.UID]OwnerState
		want   Action
	}{
		{"no owners", Dependent{}, nil, Action{Op: Keep}},
		{"owner exists", Dependent{OwnerReferences: refs("a")}, map[types.UID]OwnerState{"a": OwnerExists}, Action{Op: Keep}},
		{"owner gone: background", Dependent{OwnerReferences: refs("a")}, map[types.UID]OwnerState{"a": OwnerAbsent},
			Action{Op: Delete, Policy: metav1.DeletePropagationBackground}},
		{"all owners gone", Dependent{OwnerReferences: refs("a", "b")}, map[types.UID]OwnerState{"a": OwnerAbsent, "b": OwnerAbsent},
			Action{Op: Delete, Policy: metav1.DeletePropagationBackground}},
		{"one owner left: the gone one's reference goes", Dependent{OwnerReferences: refs("a", "b")}, map[types.UID]OwnerState{"a": OwnerAbsent, "b": OwnerExists},
			Action{Op: RemoveOwners, Owners: []types.UID{"a"}}},
		{"one owner left, another waits in the foreground", Dependent{OwnerReferences: refs("a", "b", "c")},
			map[types.UID]OwnerState{"a": OwnerExists, "b": OwnerDeletingDependents, "c": OwnerAbsent},
			Action{Op: RemoveOwners, Owners: []types.UID{"c", "b"}}},
		{"owner waits, no dependents of its own: background", Dependent{OwnerReferences: refs("a")}, map[types.UID]OwnerState{"a": OwnerDeletingDependents},
			Action{Op: Delete, Policy: metav1.DeletePropagationBackground}},
		{"owner waits and it has dependents: foreground", Dependent{OwnerReferences: refs("a"), HasDependents: true}, map[types.UID]OwnerState{"a": OwnerDeletingDependents},
			Action{Op: Delete, Policy: metav1.DeletePropagationForeground}},
		{"foreground with a dependent deleting its own: unblock first", Dependent{OwnerReferences: refs("a"), HasDependents: true, DependentDeletingDependents: true},
			map[types.UID]OwnerState{"a": OwnerDeletingDependents},
			Action{Op: Delete, Policy: metav1.DeletePropagationForeground, Unblock: true}},
		{"its own orphan finalizer is honoured", Dependent{OwnerReferences: refs("a"), Finalizers: []string{metav1.FinalizerOrphanDependents}},
			map[types.UID]OwnerState{"a": OwnerAbsent}, Action{Op: Delete, Policy: metav1.DeletePropagationOrphan}},
		{"its own foreground finalizer is honoured", Dependent{OwnerReferences: refs("a"), Finalizers: []string{metav1.FinalizerDeleteDependents}},
			map[types.UID]OwnerState{"a": OwnerAbsent}, Action{Op: Delete, Policy: metav1.DeletePropagationForeground}},
		{"already being deleted", Dependent{OwnerReferences: refs("a"), Deleting: true}, map[types.UID]OwnerState{"a": OwnerAbsent}, Action{Op: Keep}},
		{"an unresolvable owner keeps it", Dependent{OwnerReferences: refs("a", "b")}, map[types.UID]OwnerState{"a": OwnerAbsent, "b": OwnerUnresolvable},
			Action{Op: Keep}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DecideDependent(tc.d, tc.owners)); diff != "" {
				t.Errorf("action (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlocking(t *testing.T) {
	refs := []metav1.OwnerReference{ref("a", true), ref("b", false)}
	for _, tc := range []struct {
		owner string
		want  bool
	}{{"a", true}, {"b", false}, {"c", false}} {
		if got := Blocking(types.UID(tc.owner), refs); got != tc.want {
			t.Errorf("Blocking(%s) = %v, want %v", tc.owner, got, tc.want)
		}
	}
}

func TestRefEdits(t *testing.T) {
	refs := []metav1.OwnerReference{ref("a", true), ref("b", true)}
	if diff := cmp.Diff([]metav1.OwnerReference{ref("b", true)}, WithoutOwners(refs, "a")); diff != "" {
		t.Errorf("WithoutOwners (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{ref("a", false), ref("b", false)}, Unblocked(refs)); diff != "" {
		t.Errorf("Unblocked (-want +got):\n%s", diff)
	}
	if refs[0].BlockOwnerDeletion == nil {
		t.Error("Unblocked changed its argument")
	}
	if diff := cmp.Diff([]string{"x"}, WithoutFinalizer([]string{metav1.FinalizerOrphanDependents, "x"}, metav1.FinalizerOrphanDependents)); diff != "" {
		t.Errorf("WithoutFinalizer (-want +got):\n%s", diff)
	}
}
