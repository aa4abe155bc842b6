package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one --resource of `create role`: "deployments.apps/scale" is resource
// deployments, group apps, subresource scale.
type Resource struct {
	Group, Resource, Subresource string
}

// ParseResources reads --resource values. A bare "*" stands for every resource of every
// group: it replaces those before it and ends the list.
func ParseResources(values []string) []Resource {
	var out []Resource
	for _, v := range values {
		typed, sub, hasSub := strings.Cut(v, "/")
		name, group, hasGroup := strings.Cut(typed, ".")
		r := Resource{Group: group, Resource: name, Subresource: sub}
		if name == "*" && !hasGroup && !hasSub {
			return []Resource{r}
		}
		out = append(out, r)
	}
	return out
}

// Verbs drops repeated verbs; "*" stands for all of them and so replaces the list.
func Verbs(in []string) []string {
	if slices.Contains(in, rbacv1.VerbAll) {
		return []string{rbacv1.VerbAll}
	}
	return Unique(in)
}

// Unique drops repeats, keeping the first of each.
func Unique(in []string) []string {
	out := []string{}
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// StandardResourceVerbs are the verbs kubectl knows for resources; others only warn.
var StandardResourceVerbs = []string{"*", "get", "delete", "list", "create", "update", "patch", "watch", "proxy", "deletecollection", "use", "bind", "escalate", "impersonate"}

// StandardNonResourceVerbs are the verbs a non-resource URL rule may have.
var StandardNonResourceVerbs = []string{"*", "get", "post", "put", "delete", "patch", "head", "options"}

// specialVerbs only apply to some resources; a rule giving them on others is refused.
var specialVerbs = map[string][]schema.GroupResource{
	"use":         {{Group: "policy", Resource: "podsecuritypolicies"}, {Group: "extensions", Resource: "podsecuritypolicies"}},
	"bind":        {{Group: rbacv1.GroupName, Resource: "roles"}, {Group: rbacv1.GroupName, Resource: "clusterroles"}},
	"escalate":    {{Group: rbacv1.GroupName, Resource: "roles"}, {Group: rbacv1.GroupName, Resource: "clusterroles"}},
	"impersonate": {{Resource: "users"}, {Resource: "serviceaccounts"}, {Resource: "groups"}, {Group: "authentication.k8s.io", Resource: "userextras"}},
}

// Resolver maps a resource and group as typed to the served ones (deploy → deployments in
// apps), or says the server has no such resource.
type Resolver func(schema.GroupResource) (schema.GroupResource, error)

// ResolveResources resolves each resource's name and group, keeping what was typed where the
// server has no match, and checks them as kubectl does: a subresource or group needs a
// resource, a special verb (bind, escalate, impersonate, use) only goes with its resources,
// and every resource must be served. Checks stop at a "*" resource.
func ResolveResources(rs []Resource, verbs []string, resolve Resolver) ([]Resource, error) {
	out := make([]Resource, len(rs))
	checking := true
	for i, r := range rs {
		out[i] = r
		if checking && r.Resource == "" {
			return nil, fmt.Errorf("resource must be specified if apiGroup/subresource specified")
		}
		if r.Resource == "*" {
			checking = false
			continue
		}
		gr, err := resolve(schema.GroupResource{Group: r.Group, Resource: r.Resource})
		if err == nil {
			out[i].Group, out[i].Resource = gr.Group, gr.Resource
		}
		if !checking {
			continue
		}
		for _, v := range verbs {
			allowed, special := specialVerbs[v]
			if special && !slices.Contains(allowed, schema.GroupResource{Group: out[i].Group, Resource: out[i].Resource}) {
				return nil, fmt.Errorf("can not perform '%s' on '%s' in group '%s'", v, out[i].Resource, out[i].Group)
			}
			if special {
				err = nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Rules builds the rules of a role: one per API group (in name order) with its resources in
// the order given, then one for the non-resource URLs.
func Rules(verbs []string, resources []Resource, resourceNames, nonResourceURLs []string) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, r := range resources {
		name := r.Resource
		if r.Subresource != "" {
			name += "/" + r.Subresource
		}
		if !slices.Contains(byGroup[r.Group], name) {
			byGroup[r.Group] = append(byGroup[r.Group], name)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	rules := []rbacv1.PolicyRule{}
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{g}, Resources: byGroup[g], ResourceNames: resourceNames})
	}
	if len(nonResourceURLs) > 0 {
		rules = append(rules, rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: nonResourceURLs})
	}
	return rules
}
