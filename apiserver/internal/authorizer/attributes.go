package authorizer

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
)

// Well-known users and groups.
const (
	// SystemPrivilegedGroup is allowed everything by PrivilegedGroups.
	SystemPrivilegedGroup = "system:masters"
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	Anonymous             = "system:anonymous"
	NodesGroup            = "system:nodes"
	// NodeUserPrefix starts the name of every kubelet's user, system:node:<node name>.
	NodeUserPrefix = "system:node:"

	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	AllServiceAccountsGroup      = "system:serviceaccounts"
	ServiceAccountGroupPrefix    = "system:serviceaccounts:"
)

// User is who makes a request, as the authenticator (or impersonation) says.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether the user is a member of group.
func (u User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }

// NodeIdentity returns the node a user acts for: a user named system:node:<name> in the
// system:nodes group. isNode is false for every other user; a node user with an empty
// name gives isNode true and an empty name, which callers refuse.
func NodeIdentity(u User) (name string, isNode bool) {
	if !strings.HasPrefix(u.Name, NodeUserPrefix) || !u.InGroup(NodesGroup) {
		return "", false
	}
	return strings.TrimPrefix(u.Name, NodeUserPrefix), true
}

// Attributes are what an authorizer decides on: the user, the verb and what it is applied
// to. A resource request names a resource (and maybe a subresource, namespace and name); a
// non-resource request names a URL path.
type Attributes struct {
	User            User
	Verb            string
	ResourceRequest bool
	Path            string
	APIGroup        string
	APIVersion      string
	Namespace       string
	Resource        string
	Subresource     string
	Name            string
	// FieldSelector is the parsed fieldSelector of a list, watch or deletecollection, nil
	// when there is none or it does not parse.
	FieldSelector fields.Requirements
}

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion leaves the request to the next authorizer; a request no authorizer allows
	// is refused.
	NoOpinion Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	default:
		return "no opinion"
	}
}

// Authorizer decides on a request. The reason explains the decision to the caller (a
// refusal's message carries it); err reports a failure to decide, which never allows.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}
