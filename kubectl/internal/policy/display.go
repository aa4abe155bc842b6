package policy

import (
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// FromRulesReview turns a SelfSubjectRulesReview's answer into policy rules: resource rules
// first, then non-resource ones.
func FromRulesReview(status authorizationv1.SubjectRulesReviewStatus) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(status.ResourceRules)+len(status.NonResourceRules))
	for _, r := range status.ResourceRules {
		out = append(out, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, r := range status.NonResourceRules {
		out = append(out, rbacv1.PolicyRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
	}
	return out
}

// Breakdown splits a rule into rules of one verb each, with one group, resource and resource
// name, or one non-resource URL.
func Breakdown(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				if len(rule.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}})
					continue
				}
				for _, n := range rule.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range rule.NonResourceURLs {
		for _, v := range rule.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

// simpleKey identifies a rule on one group, resource and at most one resource name, with
// nothing else but verbs.
type simpleKey struct {
	group, resource string
	named           bool
	name            string
}

func simple(r rbacv1.PolicyRule) (simpleKey, bool) {
	if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
		return simpleKey{}, false
	}
	k := simpleKey{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		k.named, k.name = true, r.ResourceNames[0]
	}
	return k, true
}

// Compact merges the rules on the same single group, resource and resource name into one with
// all their verbs, each once, in the order first seen; other rules stay as they are (two equal
// non-resource rules print twice, as kubectl prints them).
func Compact(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out, merged []rbacv1.PolicyRule
	index := map[simpleKey]int{}
	for _, r := range rules {
		k, ok := simple(r)
		if !ok {
			out = append(out, r)
			continue
		}
		if i, seen := index[k]; seen {
			for _, v := range r.Verbs {
				if !slices.Contains(merged[i].Verbs, v) {
					merged[i].Verbs = append(merged[i].Verbs, v)
				}
			}
			continue
		}
		index[k] = len(merged)
		merged = append(merged, *r.DeepCopy())
	}
	return append(out, merged...)
}

// Sort orders rules as kubectl does: by their printed form (the generated String of a
// PolicyRule, verbs first), keeping the order of equal ones.
func Sort(rules []rbacv1.PolicyRule) {
	slices.SortStableFunc(rules, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.String(), b.String()) })
}

// ForDisplay is rules broken down, compacted and sorted: the rows kubectl prints.
func ForDisplay(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var broken []rbacv1.PolicyRule
	for _, r := range rules {
		broken = append(broken, Breakdown(r)...)
	}
	out := Compact(broken)
	Sort(out)
	return out
}

// ResourceGroup names a rule's first resource with its group, as kubectl's tables do:
// "deployments.apps", "deployments.apps/scale", "pods", "*.*".
func ResourceGroup(resources, groups []string) string {
	if len(resources) == 0 {
		return ""
	}
	name, sub, hasSub := strings.Cut(resources[0], "/")
	if len(groups) > 0 && groups[0] != "" {
		name += "." + groups[0]
	}
	if hasSub {
		name += "/" + sub
	}
	return name
}

// Row is a rule's cells in the columns Resources, Non-Resource URLs, Resource Names, Verbs.
func Row(r rbacv1.PolicyRule) []string {
	return []string{ResourceGroup(r.Resources, r.APIGroups), list(r.NonResourceURLs), list(r.ResourceNames), list(r.Verbs)}
}

// Header is the header of the rules table.
var Header = []string{"Resources", "Non-Resource URLs", "Resource Names", "Verbs"}

// list prints a list as Go prints a slice, as kubectl's tables show them: "[get list]", "[]".
func list(s []string) string { return fmt.Sprint(s) }
