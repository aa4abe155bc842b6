package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func names(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "multi document with empty and comment-only docs", in: `
# leading comment
---
apiVersion: v1
kind: Pod
metadata: {name: a}
---
---
# only a comment
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
`, want: []string{"Pod/a", "Deployment/b"}},
		{name: "json", in: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`, want: []string{"Service/s"}},
		{name: "list expands", in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c1}
- apiVersion: v1
  kind: Secret
  metadata: {name: s1}
`, want: []string{"ConfigMap/c1", "Secret/s1"}},
		{name: "missing kind", in: "apiVersion: v1\nmetadata: {name: x}\n", wantErr: "kind not set"},
		{name: "missing both", in: "metadata: {name: x}\n", wantErr: "[apiVersion not set, kind not set]"},
		{name: "bad yaml", in: "apiVersion: v1\nkind: [\n", wantErr: "error parsing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split([]byte(tt.in), "f.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(n string) string { return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + n + "}\n" }
	write("a.yaml", pod("a"))
	write("b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"}}`)
	write("notes.txt", "not a manifest")
	write("sub/c.yml", pod("c"))
	tests := []struct {
		name      string
		paths     []string
		recursive bool
		stdin     string
		want      []string
	}{
		{name: "directory", paths: []string{dir}, want: []string{"Pod/a", "Pod/b"}},
		{name: "recursive", paths: []string{dir}, recursive: true, want: []string{"Pod/a", "Pod/b", "Pod/c"}},
		{name: "file and stdin", paths: []string{filepath.Join(dir, "sub/c.yml"), "-"}, stdin: pod("s"), want: []string{"Pod/c", "Pod/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(tt.paths, tt.recursive, strings.NewReader(tt.stdin))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Read([]string{filepath.Join(dir, "nope")}, false, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing path error = %v", err)
	}
}
