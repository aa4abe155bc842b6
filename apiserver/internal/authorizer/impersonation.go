package authorizer

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"

	"minik8s.io/shared/apierror"
)

// Impersonation is who a request asks to act as, from its Impersonate-User,
// Impersonate-Group, Impersonate-Uid and Impersonate-Extra-<key> headers (kubectl's --as,
// --as-group, --as-uid).
type Impersonation struct {
	User   string
	Groups []string
	UID    string
	// Extra holds each Impersonate-Extra-<key> header's values under the key, lower-cased
	// and %-decoded.
	Extra map[string][]string
}

// ParseImpersonation reads a request's impersonation headers; ok is false when there are
// none. Groups, extras or a uid without a user are a 400, as in Kubernetes.
func ParseImpersonation(h http.Header) (imp Impersonation, ok bool, err error) {
	imp.User = h.Get(authenticationv1.ImpersonateUserHeader)
	imp.Groups = slices.Clone(h[authenticationv1.ImpersonateGroupHeader])
	imp.UID = h.Get(authenticationv1.ImpersonateUIDHeader)
	for name, values := range h {
		if !strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		key := unescapeExtraKey(strings.ToLower(name[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):]))
		if imp.Extra == nil {
			imp.Extra = map[string][]string{}
		}
		imp.Extra[key] = append(imp.Extra[key], values...)
	}
	if imp.User == "" && len(imp.Groups) == 0 && imp.UID == "" && len(imp.Extra) == 0 {
		return Impersonation{}, false, nil
	}
	if imp.User == "" {
		return Impersonation{}, false, apierror.New(apierror.ErrBadRequest, "requested %v without impersonating a user", imp.references())
	}
	return imp, true, nil
}

// unescapeExtraKey decodes a %-encoded extra key, keeping a malformed one as it came.
func unescapeExtraKey(key string) string {
	if k, err := url.PathUnescape(key); err == nil {
		return k
	}
	return key
}

// references lists what is impersonated in Kubernetes' order: the user (or service
// account), the groups, the extras by key, the uid.
func (imp Impersonation) references() []corev1.ObjectReference {
	var refs []corev1.ObjectReference
	if imp.User != "" {
		if ns, name, ok := SplitServiceAccountUsername(imp.User); ok {
			refs = append(refs, corev1.ObjectReference{Kind: "ServiceAccount", Namespace: ns, Name: name})
		} else {
			refs = append(refs, corev1.ObjectReference{Kind: "User", Name: imp.User})
		}
	}
	for _, g := range imp.Groups {
		refs = append(refs, corev1.ObjectReference{Kind: "Group", Name: g})
	}
	keys := make([]string, 0, len(imp.Extra))
	for k := range imp.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range imp.Extra[k] {
			refs = append(refs, corev1.ObjectReference{Kind: "UserExtra", APIVersion: authenticationv1.SchemeGroupVersion.String(), Name: v, FieldPath: k})
		}
	}
	if imp.UID != "" {
		refs = append(refs, corev1.ObjectReference{Kind: "UID", APIVersion: authenticationv1.SchemeGroupVersion.String(), Name: imp.UID})
	}
	return refs
}

// ImpersonationChecks are the requests the requestor must be allowed, every one, to act as
// imp: the verb impersonate on users, groups or serviceaccounts (core group), and on uids
// and userextras/<key> (authentication.k8s.io), each naming what is impersonated.
func ImpersonationChecks(requestor User, imp Impersonation) []Attributes {
	refs := imp.references()
	checks := make([]Attributes, 0, len(refs))
	for _, ref := range refs {
		a := Attributes{User: requestor, Verb: "impersonate", ResourceRequest: true, Namespace: ref.Namespace, Name: ref.Name}
		switch ref.Kind {
		case "ServiceAccount":
			a.Resource = "serviceaccounts"
		case "User":
			a.Resource = "users"
		case "Group":
			a.Resource = "groups"
		case "UserExtra":
			a.APIGroup, a.APIVersion = authenticationv1.GroupName, "v1"
			a.Resource, a.Subresource = "userextras", ref.FieldPath
		case "UID":
			a.APIGroup, a.APIVersion = authenticationv1.GroupName, "v1"
			a.Resource = "uids"
		}
		checks = append(checks, a)
	}
	return checks
}

// ImpersonatedUser is who a request acts as once its checks pass. Groups given are the
// groups; without them, a service account gets system:serviceaccounts and
// system:serviceaccounts:<namespace>. Everyone but system:anonymous is in
// system:authenticated unless system:authenticated or system:unauthenticated was given;
// system:anonymous is in system:unauthenticated.
func (imp Impersonation) ImpersonatedUser() User {
	u := User{Name: imp.User, UID: imp.UID, Groups: slices.Clone(imp.Groups), Extra: map[string][]string{}}
	for k, v := range imp.Extra {
		u.Extra[k] = slices.Clone(v)
	}
	if len(imp.Groups) == 0 {
		if ns, _, ok := SplitServiceAccountUsername(imp.User); ok {
			u.Groups = ServiceAccountGroups(ns)
		}
	}
	if u.Groups == nil {
		u.Groups = []string{}
	}
	if imp.User == Anonymous {
		if !u.InGroup(AllUnauthenticated) {
			u.Groups = append(u.Groups, AllUnauthenticated)
		}
		return u
	}
	if !u.InGroup(AllAuthenticated) && !u.InGroup(AllUnauthenticated) {
		u.Groups = append(u.Groups, AllAuthenticated)
	}
	return u
}

// ServiceAccountUsername is the user a service account's token authenticates as.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// ServiceAccountGroups are the groups every service account of a namespace is in.
func ServiceAccountGroups(namespace string) []string {
	return []string{AllServiceAccountsGroup, ServiceAccountGroupPrefix + namespace}
}

// SplitServiceAccountUsername returns the namespace and name of a service account's user,
// ok false when username is not one (or names an invalid namespace or account).
func SplitServiceAccountUsername(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 2 {
		return "", "", false
	}
	namespace, name = parts[0], parts[1]
	if len(validation.ValidateNamespaceName(namespace, false)) != 0 || len(validation.ValidateServiceAccountName(name, false)) != 0 {
		return "", "", false
	}
	return namespace, name, true
}

// MatchesServiceAccount reports whether username is the service account namespace/name,
// without building the name.
func MatchesServiceAccount(namespace, name, username string) bool {
	rest, ok := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, namespace)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return ok && rest == name
}
