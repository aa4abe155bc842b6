package bootstrap

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadTokens(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    map[string]Identity
		wantErr string
	}{
		{
			name: "kubernetes format",
			file: "# comment\n" +
				"t1,admin,uid-1,\"system:masters\"\n" +
				"\n" +
				"t2,system:node:n1,uid-2,\"system:nodes, extra\"\n" +
				"t3,system:kube-scheduler,uid-3\n",
			want: map[string]Identity{
				"t1": {User: "admin", UID: "uid-1", Groups: []string{"system:masters"}},
				"t2": {User: "system:node:n1", UID: "uid-2", Groups: []string{"system:nodes", "extra"}},
				"t3": {User: "system:kube-scheduler", UID: "uid-3"},
			},
		},
		{name: "empty file", file: "", want: map[string]Identity{}},
		{name: "too few fields", file: "t1,admin\n", wantErr: "line 1: want token,user,uid"},
		{name: "empty token", file: "t1,a,u\n,b,u\n", wantErr: "line 2: empty token"},
		{name: "repeated token", file: "t1,a,u\nt1,b,u\n", wantErr: "line 2: token repeated"},
		{name: "broken quoting", file: "t1,a,u,\"g\n", wantErr: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.csv")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadTokens(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadTokens error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadTokens: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadTokens (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("LoadTokens of a missing file succeeded")
	}
}

func TestFormatTokenRoundTrip(t *testing.T) {
	ids := map[string]Identity{
		"a": {User: "admin", UID: "u1", Groups: []string{"system:masters"}},
		"b": {User: "system:node:n", UID: "u2", Groups: []string{"system:nodes", "g2"}},
		"c": {User: "system:serverless", UID: "u3"},
	}
	var file strings.Builder
	for _, tok := range []string{"a", "b", "c"} {
		file.WriteString(formatToken(tok, ids[tok]))
	}
	if !strings.Contains(file.String(), `b,system:node:n,u2,"system:nodes,g2"`+"\n") {
		t.Errorf("groups not quoted as in the Kubernetes format:\n%s", file.String())
	}
	got, err := parseTokens([]byte(file.String()))
	if err != nil {
		t.Fatalf("parseTokens: %v", err)
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestNewTokenAndUID(t *testing.T) {
	seen := map[string]bool{}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for range 100 {
		tok, err := newToken()
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != 64 || seen[tok] {
			t.Fatalf("token %q: wrong length or repeated", tok)
		}
		seen[tok] = true
		uid, err := newUID()
		if err != nil {
			t.Fatal(err)
		}
		if !uuid.MatchString(uid) {
			t.Fatalf("uid %q is not a v4 UUID", uid)
		}
	}
}
