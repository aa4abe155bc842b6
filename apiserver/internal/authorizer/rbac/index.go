package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/authorizer"
)

// BindingIndex holds ClusterRoleBindings and RoleBindings indexed by the subjects they name,
// so that a decision looks only at the bindings that can apply to its user instead of
// walking all of them. It is immutable once built; build a new one when a binding changes.
type BindingIndex struct {
	cluster    subjectIndex[*rbacv1.ClusterRoleBinding]
	namespaced map[string]*subjectIndex[*rbacv1.RoleBinding]
}

var _ BindingLister = (*BindingIndex)(nil)

// NewBindingIndex indexes the bindings; each list keeps its order, which is the order
// decisions visit them in.
func NewBindingIndex(clusterRoleBindings []*rbacv1.ClusterRoleBinding, roleBindings []*rbacv1.RoleBinding) *BindingIndex {
	x := &BindingIndex{namespaced: map[string]*subjectIndex[*rbacv1.RoleBinding]{}}
	for _, b := range clusterRoleBindings {
		x.cluster.add(b, b.Subjects, "")
	}
	for _, b := range roleBindings {
		ns := x.namespaced[b.Namespace]
		if ns == nil {
			ns = &subjectIndex[*rbacv1.RoleBinding]{}
			x.namespaced[b.Namespace] = ns
		}
		ns.add(b, b.Subjects, b.Namespace)
	}
	return x
}

// ClusterRoleBindingsFor implements BindingLister.
func (x *BindingIndex) ClusterRoleBindingsFor(u authorizer.User) ([]*rbacv1.ClusterRoleBinding, error) {
	return x.cluster.lookup(u), nil
}

// RoleBindingsFor implements BindingLister.
func (x *BindingIndex) RoleBindingsFor(u authorizer.User, namespace string) ([]*rbacv1.RoleBinding, error) {
	ns := x.namespaced[namespace]
	if ns == nil {
		return nil, nil
	}
	return ns.lookup(u), nil
}

// subjectKey names a subject as a user presents it: a user name, a group, or a service
// account as "<namespace>:<name>", which is what follows system:serviceaccount: in its user
// name.
type subjectKey struct {
	kind byte
	name string
}

const (
	userKey           = 'u'
	groupKey          = 'g'
	serviceAccountKey = 's'
)

type subjectIndex[T any] struct {
	all []T
	// by holds, for each subject, the positions in all of the bindings naming it, ascending.
	by map[subjectKey][]int32
}

func (x *subjectIndex[T]) add(b T, subjects []rbacv1.Subject, bindingNamespace string) {
	pos := int32(len(x.all))
	x.all = append(x.all, b)
	if x.by == nil {
		x.by = map[subjectKey][]int32{}
	}
	for i := range subjects {
		k, ok := keyOf(&subjects[i], bindingNamespace)
		if !ok {
			continue
		}
		if l := x.by[k]; len(l) == 0 || l[len(l)-1] != pos {
			x.by[k] = append(l, pos)
		}
	}
}

// keyOf is the key of a subject as appliesToUser matches it; a subject that can match no
// user has none.
func keyOf(s *rbacv1.Subject, bindingNamespace string) (subjectKey, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return subjectKey{userKey, s.Name}, true
	case rbacv1.GroupKind:
		return subjectKey{groupKey, s.Name}, true
	case rbacv1.ServiceAccountKind:
		ns := bindingNamespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		if ns == "" {
			return subjectKey{}, false
		}
		return subjectKey{serviceAccountKey, ns + ":" + s.Name}, true
	default:
		return subjectKey{}, false
	}
}

// lookup returns the bindings naming u, its groups or its service account, in their order.
func (x *subjectIndex[T]) lookup(u authorizer.User) []T {
	if len(x.by) == 0 {
		return nil
	}
	var (
		found  [][]int32
		single []int32
	)
	take := func(k subjectKey) {
		l := x.by[k]
		if len(l) == 0 {
			return
		}
		if single == nil && found == nil {
			single = l
			return
		}
		if found == nil {
			found = append(found, single)
		}
		found = append(found, l)
	}
	take(subjectKey{userKey, u.Name})
	for _, g := range u.Groups {
		take(subjectKey{groupKey, g})
	}
	if rest, ok := strings.CutPrefix(u.Name, authorizer.ServiceAccountUsernamePrefix); ok {
		take(subjectKey{serviceAccountKey, rest})
	}
	if found == nil {
		out := make([]T, len(single))
		for i, p := range single {
			out[i] = x.all[p]
		}
		return out
	}
	var positions []int32
	for _, l := range found {
		positions = append(positions, l...)
	}
	slices.Sort(positions)
	positions = slices.Compact(positions)
	out := make([]T, len(positions))
	for i, p := range positions {
		out[i] = x.all[p]
	}
	return out
}
