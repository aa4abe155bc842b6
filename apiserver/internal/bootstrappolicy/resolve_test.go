package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// call is one API request as the authorizer sees it. resource may carry a subresource
// ("pods/status"); name is empty for lists, creates and collections.
type call struct {
	verb, group, resource, namespace, name string
}

func (c call) String() string {
	s := c.verb + " " + c.resource
	if c.group != "" {
		s += "." + c.group
	}
	if c.namespace != "" {
		s += " in " + c.namespace
	}
	if c.name != "" {
		s += " named " + c.name
	}
	return s
}

// allowed says whether rules grant c, through the same coverage check reconciliation uses: a
// request is a one-verb, one-resource rule, with its name when it has one.
func allowed(rules []rbacv1.PolicyRule, c call) bool {
	want := rbacv1.PolicyRule{Verbs: []string{c.verb}, APIGroups: []string{c.group}, Resources: []string{c.resource}}
	if c.name != "" {
		want.ResourceNames = []string{c.name}
	}
	ok, _ := validation.Covers(rules, []rbacv1.PolicyRule{want})
	return ok
}

// aggregated is ClusterRoles() with the aggregation controller's work done: each aggregated
// role holds the rules of the roles its selectors match, repeated until nothing changes (edit
// is itself aggregated into admin).
func aggregated() map[string]rbacv1.ClusterRole {
	byName := map[string]rbacv1.ClusterRole{}
	var names []string
	for _, r := range ClusterRoles() {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	for changed := true; changed; {
		changed = false
		for _, name := range names {
			role := byName[name]
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range role.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					panic(err)
				}
				for _, other := range names {
					if other != name && s.Matches(labels.Set(byName[other].Labels)) {
						rules = append(rules, byName[other].Rules...)
					}
				}
			}
			if len(rules) != len(role.Rules) {
				role.Rules = rules
				byName[name] = role
				changed = true
			}
		}
	}
	return byName
}

// rulesFor is what the default policy grants user (in groups) in namespace ("" for cluster
// scope): the ClusterRoles bound to them, and in namespace the Roles bound there too.
func rulesFor(user string, groups []string, namespace string) []rbacv1.PolicyRule {
	roles := aggregated()
	var rules []rbacv1.PolicyRule
	for _, b := range ClusterRoleBindings() {
		if binds(b.Subjects, user, groups) {
			rules = append(rules, roles[b.RoleRef.Name].Rules...)
		}
	}
	if namespace == "" {
		return rules
	}
	nsRoles := map[string]rbacv1.Role{}
	for _, r := range NamespaceRoles()[namespace] {
		nsRoles[r.Name] = r
	}
	for _, b := range NamespaceRoleBindings()[namespace] {
		if binds(b.Subjects, user, groups) {
			rules = append(rules, nsRoles[b.RoleRef.Name].Rules...)
		}
	}
	return rules
}

func binds(subjects []rbacv1.Subject, user string, groups []string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(groups, s.Name) {
				return true
			}
		}
	}
	return false
}

// authenticated are the groups every signed-in component has besides its own.
func authenticated(groups ...string) []string {
	return append(groups, AuthenticatedGroup)
}
