package authorizer

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fixed(d Decision, reason string, err error) Func {
	return func(context.Context, Attributes) (Decision, string, error) { return d, reason, err }
}

func TestChain(t *testing.T) {
	boom := errors.New("boom")
	type want struct {
		Decision Decision
		Reason   string
		Err      string
	}
	cases := []struct {
		name  string
		chain []Named
		want  want
	}{
		{
			name:  "empty chain has no opinion",
			chain: nil,
			want:  want{NoOpinion, "", ""},
		},
		{
			name:  "first allow wins with its own reason",
			chain: []Named{{"node", fixed(NoOpinion, "not related", nil)}, {"rbac", fixed(Allow, "RBAC: allowed", nil)}, {"never", fixed(Deny, "x", nil)}},
			want:  want{Allow, "RBAC: allowed", ""},
		},
		{
			name:  "deny stops the chain",
			chain: []Named{{"a", fixed(Deny, "no", nil)}, {"b", fixed(Allow, "", nil)}},
			want:  want{Deny, "no", ""},
		},
		{
			name:  "an allow carries its own error only",
			chain: []Named{{"a", fixed(NoOpinion, "", boom)}, {"b", fixed(Allow, "", nil)}},
			want:  want{Allow, "", ""},
		},
		{
			name:  "no opinion collects named reasons and every error",
			chain: []Named{{"node", fixed(NoOpinion, "no relationship found", nil)}, {"rbac", fixed(NoOpinion, "", boom)}, {"webhook", fixed(NoOpinion, "down", errors.New("timeout"))}},
			want:  want{NoOpinion, "node: no relationship found\nwebhook: down", "[boom, timeout]"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewChain(tc.chain...)
			if err != nil {
				t.Fatalf("NewChain: %v", err)
			}
			d, reason, err := c.Authorize(t.Context(), Attributes{})
			got := want{d, reason, ""}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewChainRefusesBadNames(t *testing.T) {
	allow := fixed(Allow, "", nil)
	for name, chain := range map[string][]Named{
		"empty":     {{"", allow}},
		"duplicate": {{"rbac", allow}, {"rbac", allow}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewChain(chain...); err == nil {
				t.Errorf("NewChain(%v) succeeded, want an error", chain)
			}
		})
	}
}

func TestPrivilegedGroups(t *testing.T) {
	p := PrivilegedGroups{SystemPrivilegedGroup}
	cases := []struct {
		groups []string
		want   Decision
	}{
		{[]string{"system:authenticated", SystemPrivilegedGroup}, Allow},
		{[]string{"system:authenticated"}, NoOpinion},
		{nil, NoOpinion},
		{[]string{"system:master"}, NoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.want.String(), func(t *testing.T) {
			d, _, err := p.Authorize(t.Context(), Attributes{User: User{Name: "u", Groups: tc.groups}, Verb: "delete", ResourceRequest: true, Resource: "nodes"})
			if err != nil || d != tc.want {
				t.Errorf("groups %v: got %v, %v; want %v", tc.groups, d, err, tc.want)
			}
		})
	}
}

func TestNodeIdentity(t *testing.T) {
	cases := []struct {
		user   User
		name   string
		isNode bool
	}{
		{User{Name: "system:node:n1", Groups: []string{NodesGroup, AllAuthenticated}}, "n1", true},
		{User{Name: "system:node:", Groups: []string{NodesGroup}}, "", true},
		{User{Name: "system:node:n1"}, "", false},
		{User{Name: "n1", Groups: []string{NodesGroup}}, "", false},
		{User{Name: "system:serviceaccount:ns:n1", Groups: []string{NodesGroup}}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.user.Name, func(t *testing.T) {
			name, isNode := NodeIdentity(tc.user)
			if name != tc.name || isNode != tc.isNode {
				t.Errorf("NodeIdentity(%+v) = %q, %v; want %q, %v", tc.user, name, isNode, tc.name, tc.isNode)
			}
		})
	}
}
