package authorizer

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/apierror"
)

func TestImpersonation(t *testing.T) {
	admin := User{Name: "admin", Groups: []string{"system:masters", AllAuthenticated}}
	cases := []struct {
		name       string
		headers    http.Header
		wantChecks []Attributes
		wantUser   User
	}{
		{
			name:    "a user",
			headers: http.Header{"Impersonate-User": {"jane"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "users", Name: "jane"},
			},
			wantUser: User{Name: "jane", Groups: []string{AllAuthenticated}, Extra: map[string][]string{}},
		},
		{
			name:    "a user with groups",
			headers: http.Header{"Impersonate-User": {"jane"}, "Impersonate-Group": {"dev", "ops"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "users", Name: "jane"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "groups", Name: "dev"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "groups", Name: "ops"},
			},
			wantUser: User{Name: "jane", Groups: []string{"dev", "ops", AllAuthenticated}, Extra: map[string][]string{}},
		},
		{
			name:    "a service account gets its groups",
			headers: http.Header{"Impersonate-User": {"system:serviceaccount:ns:builder"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Namespace: "ns", Resource: "serviceaccounts", Name: "builder"},
			},
			wantUser: User{Name: "system:serviceaccount:ns:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", AllAuthenticated}, Extra: map[string][]string{}},
		},
		{
			name:    "a service account with groups given gets only those",
			headers: http.Header{"Impersonate-User": {"system:serviceaccount:ns:builder"}, "Impersonate-Group": {"system:unauthenticated"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Namespace: "ns", Resource: "serviceaccounts", Name: "builder"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "groups", Name: "system:unauthenticated"},
			},
			wantUser: User{Name: "system:serviceaccount:ns:builder", Groups: []string{"system:unauthenticated"}, Extra: map[string][]string{}},
		},
		{
			name:    "an invalid service account name is a user",
			headers: http.Header{"Impersonate-User": {"system:serviceaccount:NS:b"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "users", Name: "system:serviceaccount:NS:b"},
			},
			wantUser: User{Name: "system:serviceaccount:NS:b", Groups: []string{AllAuthenticated}, Extra: map[string][]string{}},
		},
		{
			name:    "anonymous",
			headers: http.Header{"Impersonate-User": {"system:anonymous"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "users", Name: "system:anonymous"},
			},
			wantUser: User{Name: "system:anonymous", Groups: []string{AllUnauthenticated}, Extra: map[string][]string{}},
		},
		{
			name: "extras and a uid",
			headers: http.Header{"Impersonate-User": {"jane"}, "Impersonate-Uid": {"1234"},
				"Impersonate-Extra-Scopes": {"view", "edit"}, "Impersonate-Extra-Example.com%2fteam": {"a"}},
			wantChecks: []Attributes{
				{User: admin, Verb: "impersonate", ResourceRequest: true, Resource: "users", Name: "jane"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", APIVersion: "v1", Resource: "userextras", Subresource: "example.com/team", Name: "a"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", APIVersion: "v1", Resource: "userextras", Subresource: "scopes", Name: "view"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", APIVersion: "v1", Resource: "userextras", Subresource: "scopes", Name: "edit"},
				{User: admin, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", APIVersion: "v1", Resource: "uids", Name: "1234"},
			},
			wantUser: User{Name: "jane", UID: "1234", Groups: []string{AllAuthenticated}, Extra: map[string][]string{"scopes": {"view", "edit"}, "example.com/team": {"a"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			imp, ok, err := ParseImpersonation(tc.headers)
			if err != nil || !ok {
				t.Fatalf("ParseImpersonation = %v, %v", ok, err)
			}
			if diff := cmp.Diff(tc.wantChecks, ImpersonationChecks(admin, imp)); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUser, imp.ImpersonatedUser()); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseImpersonationWithoutUser(t *testing.T) {
	cases := []struct {
		name    string
		headers http.Header
		wantOK  bool
		wantErr string
	}{
		{name: "no headers", headers: http.Header{"Authorization": {"Bearer x"}}},
		{name: "group without user", headers: http.Header{"Impersonate-Group": {"dev"}},
			wantErr: "requested [{Group  dev    }] without impersonating a user"},
		{name: "uid without user", headers: http.Header{"Impersonate-Uid": {"1"}},
			wantErr: "requested [{UID  1  authentication.k8s.io/v1  }] without impersonating a user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := ParseImpersonation(tc.headers)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr || !errors.Is(err, apierror.ErrBadRequest) {
				t.Errorf("error = %v, want bad request %q", err, tc.wantErr)
			}
		})
	}
}

func TestServiceAccountUsernames(t *testing.T) {
	cases := []struct {
		username string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:ns:sa", "ns", "sa", true},
		{"system:serviceaccount:ns:sa:extra", "", "", false},
		{"system:serviceaccount:ns", "", "", false},
		{"system:serviceaccounts:ns", "", "", false},
		{"system:serviceaccount::sa", "", "", false},
		{"jane", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.username, func(t *testing.T) {
			ns, name, ok := SplitServiceAccountUsername(tc.username)
			if ns != tc.ns || name != tc.name || ok != tc.ok {
				t.Errorf("SplitServiceAccountUsername = %q, %q, %v; want %q, %q, %v", ns, name, ok, tc.ns, tc.name, tc.ok)
			}
			if ok && ServiceAccountUsername(ns, name) != tc.username {
				t.Errorf("ServiceAccountUsername(%q, %q) = %q", ns, name, ServiceAccountUsername(ns, name))
			}
			if got := MatchesServiceAccount("ns", "sa", tc.username); got != (tc.username == "system:serviceaccount:ns:sa") {
				t.Errorf("MatchesServiceAccount(ns, sa, %q) = %v", tc.username, got)
			}
		})
	}
}
