package rbac

import (
	"fmt"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"minik8s.io/apiserver/internal/authorizer"
)

// RoleGetter finds a Role; a missing one is an error (its text goes into reasons).
type RoleGetter interface {
	GetRole(namespace, name string) (*rbacv1.Role, error)
}

// ClusterRoleGetter finds a ClusterRole; a missing one is an error.
type ClusterRoleGetter interface {
	GetClusterRole(name string) (*rbacv1.ClusterRole, error)
}

// BindingLister finds the bindings that may apply to a user: every ClusterRoleBinding, or
// every RoleBinding of a namespace, that names the user, one of its groups or its service
// account, in the order they are listed, and possibly others (the resolver checks each).
// BindingIndex is one.
type BindingLister interface {
	ClusterRoleBindingsFor(u authorizer.User) ([]*rbacv1.ClusterRoleBinding, error)
	RoleBindingsFor(u authorizer.User, namespace string) ([]*rbacv1.RoleBinding, error)
}

// Resolver finds the rules that apply to a user, from the bindings that name the user,
// one of its groups or its service account.
type Resolver struct {
	roles        RoleGetter
	clusterRoles ClusterRoleGetter
	bindings     BindingLister
}

// NewResolver reads policy through the getters and the binding lister.
func NewResolver(roles RoleGetter, clusterRoles ClusterRoleGetter, bindings BindingLister) *Resolver {
	return &Resolver{roles: roles, clusterRoles: clusterRoles, bindings: bindings}
}

// Visitor is called with each rule that applies and where it comes from, or with an error
// met on the way (rule nil); returning false stops the visit.
type Visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// VisitRulesFor visits the rules that apply to u in namespace: those of every
// ClusterRoleBinding naming u, then, for a namespace, those of its RoleBindings naming u.
// A binding whose role cannot be found contributes an error and no rules, and the visit
// goes on: policy is purely additive, so what was found still holds.
func (r *Resolver) VisitRulesFor(u authorizer.User, namespace string, visit Visitor) {
	crbs, err := r.bindings.ClusterRoleBindingsFor(u)
	if err != nil {
		if !visit(nil, nil, err) {
			return
		}
	} else {
		for _, b := range crbs {
			i, ok := appliesTo(u, b.Subjects, "")
			if !ok {
				continue
			}
			rules, err := r.GetRoleReferenceRules(b.RoleRef, "")
			if err != nil {
				if !visit(nil, nil, err) {
					return
				}
				continue
			}
			src := clusterRoleBindingSource{binding: b, subject: &b.Subjects[i]}
			for j := range rules {
				if !visit(src, &rules[j], nil) {
					return
				}
			}
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := r.bindings.RoleBindingsFor(u, namespace)
	if err != nil {
		visit(nil, nil, err)
		return
	}
	for _, b := range rbs {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := r.GetRoleReferenceRules(b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := roleBindingSource{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
}

// RulesFor returns every rule that applies to u in namespace, and the errors met finding
// them; the rules returned hold even when there is an error.
func (r *Resolver) RulesFor(u authorizer.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	r.VisitRulesFor(u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// GetRoleReferenceRules returns the rules of the role a binding refers to: a Role in the
// binding's namespace, or a ClusterRole (for a RoleBinding, its rules then apply within the
// binding's namespace only).
func (r *Resolver) GetRoleReferenceRules(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role, err := r.roles.GetRole(bindingNamespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := r.clusterRoles.GetClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the index of the first subject that is u.
func appliesTo(u authorizer.User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if appliesToUser(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

func appliesToUser(u authorizer.User, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return u.InGroup(s.Name)
	case rbacv1.ServiceAccountKind:
		// A RoleBinding's service account without a namespace is one of the binding's own.
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && authorizer.MatchesServiceAccount(ns, s.Name, u.Name)
	default:
		return false
	}
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := bindingNamespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return s.Kind + " " + strconv.Quote(s.Name+"/"+ns)
	}
	return s.Kind + " " + strconv.Quote(s.Name)
}

type clusterRoleBindingSource struct {
	binding *rbacv1.ClusterRoleBinding
	subject *rbacv1.Subject
}

func (d clusterRoleBindingSource) String() string {
	// Concatenated rather than formatted: every allowed request builds one.
	return "ClusterRoleBinding " + strconv.Quote(d.binding.Name) + " of " + d.binding.RoleRef.Kind + " " +
		strconv.Quote(d.binding.RoleRef.Name) + " to " + describeSubject(d.subject, "")
}

type roleBindingSource struct {
	binding *rbacv1.RoleBinding
	subject *rbacv1.Subject
}

func (d roleBindingSource) String() string {
	return "RoleBinding " + strconv.Quote(d.binding.Name+"/"+d.binding.Namespace) + " of " + d.binding.RoleRef.Kind + " " +
		strconv.Quote(d.binding.RoleRef.Name) + " to " + describeSubject(d.subject, d.binding.Namespace)
}
