package authorizer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Named is an authorizer with the name a chain prefixes its reasons with.
type Named struct {
	Name       string
	Authorizer Authorizer
}

// Chain asks its authorizers in order. The first Allow or Deny is the answer, with that
// authorizer's reason and error; when every one has no opinion, the answer is NoOpinion
// with every reason (each as "<name>: <reason>", one a line) and every error.
type Chain []Named

// NewChain checks that every authorizer has a name of its own.
func NewChain(authorizers ...Named) (Chain, error) {
	seen := make(map[string]bool, len(authorizers))
	for _, n := range authorizers {
		if n.Name == "" {
			return nil, fmt.Errorf("empty authorizer name in chain")
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("duplicate authorizer name %q in chain", n.Name)
		}
		seen[n.Name] = true
	}
	return Chain(authorizers), nil
}

// Authorize implements Authorizer.
func (c Chain) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, n := range c {
		d, reason, err := n.Authorizer.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, n.Name+": "+reason)
		}
		if d == Allow || d == Deny {
			return d, reason, err
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// PrivilegedGroups allows every request of a member of one of its groups and has no
// opinion on anyone else's. Kubernetes gives system:masters this, ahead of every other
// authorizer, so the apiserver's own loopback client is never refused.
type PrivilegedGroups []string

// Authorize implements Authorizer.
func (p PrivilegedGroups) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	for _, g := range a.User.Groups {
		if slices.Contains(p, g) {
			return Allow, "", nil
		}
	}
	return NoOpinion, "", nil
}

// RuleResolver lists what a user may do in a namespace, for SelfSubjectRulesReview.
// incomplete says the list may leave out what the resolver allows but cannot enumerate;
// an error says some rules could not be found, while the ones returned still hold.
type RuleResolver interface {
	RulesFor(ctx context.Context, u User, namespace string) (resource []authorizationv1.ResourceRule, nonResource []authorizationv1.NonResourceRule, incomplete bool, err error)
}

// RuleResolvers joins the rules of each resolver; the list is incomplete when any part is.
type RuleResolvers []RuleResolver

// RulesFor implements RuleResolver.
func (rs RuleResolvers) RulesFor(ctx context.Context, u User, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	var (
		resource    []authorizationv1.ResourceRule
		nonResource []authorizationv1.NonResourceRule
		incomplete  bool
		errs        []error
	)
	for _, r := range rs {
		rr, nr, inc, err := r.RulesFor(ctx, u, namespace)
		resource = append(resource, rr...)
		nonResource = append(nonResource, nr...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return resource, nonResource, incomplete, utilerrors.NewAggregate(errs)
}
