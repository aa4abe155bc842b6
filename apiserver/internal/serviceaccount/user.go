package serviceaccount

import (
	"strings"
)

// Names and keys of a ServiceAccount's identity, as Kubernetes spells them.
const (
	UsernamePrefix     = "system:serviceaccount:"
	AllGroup           = "system:serviceaccounts"
	GroupPrefix        = "system:serviceaccounts:"
	AuthenticatedGroup = "system:authenticated"

	PodNameKey      = "authentication.kubernetes.io/pod-name"
	PodUIDKey       = "authentication.kubernetes.io/pod-uid"
	NodeNameKey     = "authentication.kubernetes.io/node-name"
	NodeUIDKey      = "authentication.kubernetes.io/node-uid"
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// User is who a token authenticates.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Response is what an authenticator answers for a token it recognises: the user, and the
// audiences both the token and the caller accept.
type Response struct {
	User      User
	Audiences []string
}

// Username is the user name of a ServiceAccount: system:serviceaccount:<namespace>:<name>.
func Username(namespace, name string) string {
	return UsernamePrefix + namespace + ":" + name
}

// SplitUsername returns the namespace and name of a ServiceAccount user name; ok is false
// for any other user.
func SplitUsername(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, UsernamePrefix)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	if !found || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// Groups are the groups every ServiceAccount of a namespace is in. Kubernetes adds
// system:authenticated after its authenticator chain; it is part of the identity here so that
// TokenReview and authorization see the same groups whoever calls.
func Groups(namespace string) []string {
	return []string{AllGroup, GroupPrefix + namespace, AuthenticatedGroup}
}

// CredentialID is how a token's jti appears in the user's extra, so audit logs can tie requests
// to the TokenRequest that issued the token.
func CredentialID(jti string) string {
	if jti == "" {
		return ""
	}
	return "JTI=" + jti
}

// userFor builds the identity of validated claims; the pod and node extras only appear when
// the token carries them, as in Kubernetes.
func userFor(c *Claims) User {
	u := User{
		Name:   Username(c.Namespace, c.ServiceAccount.Name),
		UID:    c.ServiceAccount.UID,
		Groups: Groups(c.Namespace),
	}
	extra := map[string][]string{}
	if c.Pod != nil {
		extra[PodNameKey] = []string{c.Pod.Name}
		extra[PodUIDKey] = []string{c.Pod.UID}
	}
	if id := CredentialID(c.ID); id != "" {
		extra[CredentialIDKey] = []string{id}
	}
	if c.Node != nil && c.Node.Name != "" {
		extra[NodeNameKey] = []string{c.Node.Name}
		if c.Node.UID != "" {
			extra[NodeUIDKey] = []string{c.Node.UID}
		}
	}
	if len(extra) > 0 {
		u.Extra = extra
	}
	return u
}
