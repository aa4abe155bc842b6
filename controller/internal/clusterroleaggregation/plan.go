package clusterroleaggregation

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Rules is what the aggregated ClusterRole role grants, given every ClusterRole there is: for
// each of its selectors in turn, the rules of the roles it matches (role itself never), in the
// order of the roles' names and then of their rules, each rule once. The order is Kubernetes'
// and keeps the result stable, so an unchanged set of roles never causes a write. A selector
// that does not parse is an error (validation keeps such roles out of the API).
func Rules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return nil, nil
	}
	byName := slices.Clone(all)
	slices.SortFunc(byName, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	var rules []rbacv1.PolicyRule
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: selector %d: %w", role.Name, i, err)
		}
		for _, other := range byName {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

// Update is role with rules in place of its own, or nil when it already grants exactly them
// (an empty list and none are the same). role is not modified.
func Update(role *rbacv1.ClusterRole, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	out := role.DeepCopy()
	out.Rules = make([]rbacv1.PolicyRule, len(rules))
	for i := range rules {
		rules[i].DeepCopyInto(&out.Rules[i])
	}
	return out
}
