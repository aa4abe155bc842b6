package rbac

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"minik8s.io/apiserver/internal/authorizer"
)

// Authorizer allows what a rule bound to the user allows and has no opinion otherwise.
type Authorizer struct {
	resolver *Resolver
}

// New builds the RBAC authorizer over the getters and the binding lister.
func New(roles RoleGetter, clusterRoles ClusterRoleGetter, bindings BindingLister) *Authorizer {
	return &Authorizer{resolver: NewResolver(roles, clusterRoles, bindings)}
}

// Resolver is where the authorizer finds rules, for the escalation checks.
func (a *Authorizer) Resolver() *Resolver {
	return a.resolver
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// Authorize implements authorizer.Authorizer. An allow's reason names the binding, its role
// and the subject that matched; a refusal has no reason unless some bindings' roles could
// not be found, which it then lists.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var (
		reason string
		errs   []error
	)
	a.resolver.VisitRulesFor(attrs.User, attrs.Namespace, func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if reason != "" {
		return authorizer.Allow, reason, nil
	}
	if len(errs) > 0 {
		return authorizer.NoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authorizer.NoOpinion, "", nil
}

// RulesFor implements authorizer.RuleResolver: every rule that applies to u in namespace,
// split into resource and non-resource rules as SelfSubjectRulesReview shows them. RBAC
// can always list what it allows, so the list is never incomplete; the error names roles
// that could not be found.
func (a *Authorizer) RulesFor(_ context.Context, u authorizer.User, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	rules, err := a.resolver.RulesFor(u, namespace)
	var (
		resource    []authorizationv1.ResourceRule
		nonResource []authorizationv1.NonResourceRule
	)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resource = append(resource, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResource = append(nonResource, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return resource, nonResource, false, err
}
