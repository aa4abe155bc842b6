package rbac

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/auth/rbac/validation"

	"minik8s.io/apiserver/internal/authorizer"
)

// EscalationAllowed reports whether u may write any role or binding without the checks
// below: members of system:masters, the apiserver's own loopback identity among them.
func EscalationAllowed(u authorizer.User) bool {
	return u.InGroup(authorizer.SystemPrivilegedGroup)
}

// RoleEscalationAuthorized reports whether the request writing a Role or ClusterRole is
// itself allowed the verb escalate on it, which lets its author grant what it does not hold.
func RoleEscalationAuthorized(ctx context.Context, authz authorizer.Authorizer, request authorizer.Attributes) bool {
	if authz == nil || !request.ResourceRequest || request.APIGroup != rbacv1.GroupName {
		return false
	}
	if request.Resource != "roles" && request.Resource != "clusterroles" {
		return false
	}
	attrs := authorizer.Attributes{
		User:            request.User,
		Verb:            "escalate",
		ResourceRequest: true,
		APIGroup:        request.APIGroup,
		APIVersion:      "*",
		Namespace:       request.Namespace,
		Resource:        request.Resource,
		Name:            request.Name,
	}
	// An error never allows, so there is nothing more to do with it.
	d, _, _ := authz.Authorize(ctx, attrs)
	return d == authorizer.Allow
}

// BindingAuthorized reports whether u is allowed the verb bind on the role a binding refers
// to, in the binding's namespace ("" for a ClusterRoleBinding): that lets u bind a role
// whose rules it does not hold.
func BindingAuthorized(ctx context.Context, authz authorizer.Authorizer, u authorizer.User, ref rbacv1.RoleRef, bindingNamespace string) bool {
	if authz == nil {
		return false
	}
	attrs := authorizer.Attributes{
		User:            u,
		Verb:            "bind",
		ResourceRequest: true,
		APIGroup:        ref.APIGroup,
		APIVersion:      "*",
		Namespace:       bindingNamespace,
		Name:            ref.Name,
	}
	switch ref.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	default:
		return false
	}
	d, _, _ := authz.Authorize(ctx, attrs)
	return d == authorizer.Allow
}

// ConfirmNoEscalation refuses rules that u does not hold in namespace ("" for cluster-wide
// rules), with Kubernetes' message listing each missing permission. Rules u holds but whose
// source could not be read are not held; the message then says why.
func (r *Resolver) ConfirmNoEscalation(_ context.Context, u authorizer.User, rules []rbacv1.PolicyRule, namespace string) error {
	owned, resolveErr := r.RulesFor(u, namespace)
	covered, missing := validation.Covers(owned, rules)
	if covered {
		return nil
	}
	descriptions := map[string]bool{}
	for _, m := range CompactRules(missing) {
		descriptions[CompactString(m)] = true
	}
	lines := make([]string, 0, len(descriptions))
	for d := range descriptions {
		lines = append(lines, d)
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return fmt.Errorf("%s", msg)
}

// CompactRules merges rules that name one API group and one resource and differ only in
// verbs, so a refusal lists {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}
// rather than a line a verb.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	compacted := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[schema.GroupResource]int{}
	for _, rule := range rules {
		gr, ok := simpleResource(rule)
		if !ok {
			compacted = append(compacted, rule)
			continue
		}
		if i, seen := simple[gr]; seen {
			compacted[i].Verbs = append(compacted[i].Verbs, rule.Verbs...)
			continue
		}
		simple[gr] = len(compacted)
		compacted = append(compacted, *rule.DeepCopy())
	}
	return compacted
}

// simpleResource returns the one group and resource of a rule that has nothing but those
// and verbs.
func simpleResource(rule rbacv1.PolicyRule) (schema.GroupResource, bool) {
	if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 || len(rule.APIGroups) != 1 || len(rule.Resources) != 1 {
		return schema.GroupResource{}, false
	}
	only := rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: rule.Resources, Verbs: rule.Verbs}
	if !reflect.DeepEqual(only, rule) {
		return schema.GroupResource{}, false
	}
	return schema.GroupResource{Group: rule.APIGroups[0], Resource: rule.Resources[0]}, true
}

// CheckRoleWrite refuses, with a 403 naming the missing permissions, a request that creates
// or updates the Role or ClusterRole name with rules its author does not hold, unless the
// author is in system:masters or is allowed escalate on it.
func (r *Resolver) CheckRoleWrite(ctx context.Context, authz authorizer.Authorizer, request authorizer.Attributes, name string, rules []rbacv1.PolicyRule) error {
	if EscalationAllowed(request.User) || RoleEscalationAuthorized(ctx, authz, request) {
		return nil
	}
	if err := r.ConfirmNoEscalation(ctx, request.User, rules, request.Namespace); err != nil {
		return authorizer.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: request.Resource}, name, err)
	}
	return nil
}

// CheckBindingWrite refuses, with a 403, a request that creates or updates the RoleBinding
// or ClusterRoleBinding name to a role whose rules its author does not hold (or that
// cannot be found), unless the author is in system:masters or is allowed bind on the role.
func (r *Resolver) CheckBindingWrite(ctx context.Context, authz authorizer.Authorizer, request authorizer.Attributes, name string, ref rbacv1.RoleRef) error {
	if EscalationAllowed(request.User) || BindingAuthorized(ctx, authz, request.User, ref, request.Namespace) {
		return nil
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: request.Resource}
	rules, err := r.GetRoleReferenceRules(ref, request.Namespace)
	if err != nil {
		return authorizer.NewForbidden(gr, name, err)
	}
	if err := r.ConfirmNoEscalation(ctx, request.User, rules, request.Namespace); err != nil {
		return authorizer.NewForbidden(gr, name, err)
	}
	return nil
}
