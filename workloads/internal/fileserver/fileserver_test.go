package fileserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type step struct {
	method, path, body string
	wantCode           int
	wantBody           string // compared when not empty
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		steps []step
		// wantFiles is the tree on disk afterwards: path -> contents ("/" suffix for a dir).
		wantFiles map[string]string
	}{
		{
			name: "put then get then list",
			steps: []step{
				{"PUT", "/hello.txt", "hi there", 201, "8 bytes\n"},
				{"GET", "/hello.txt", "", 200, "hi there"},
				{"GET", "/", "", 200, "hello.txt\n"},
			},
			wantFiles: map[string]string{"hello.txt": "hi there"},
		},
		{
			name: "overwrite answers 200 and replaces",
			steps: []step{
				{"PUT", "/a", "one", 201, ""},
				{"PUT", "/a", "two!", 200, "4 bytes\n"},
				{"GET", "/a", "", 200, "two!"},
			},
			wantFiles: map[string]string{"a": "two!"},
		},
		{
			name: "nested put creates directories, listing is sorted and marks them",
			steps: []step{
				{"PUT", "/d/e/f.txt", "x", 201, ""},
				{"PUT", "/b.txt", "y", 201, ""},
				{"GET", "/", "", 200, "b.txt\nd/\n"},
				{"GET", "/d/", "", 200, "e/\n"},
				{"GET", "/d/e", "", 200, "f.txt\n"},
			},
			wantFiles: map[string]string{"b.txt": "y", "d/": "", "d/e/": "", "d/e/f.txt": "x"},
		},
		{
			name: "dot-dot stays inside the root",
			steps: []step{
				{"PUT", "/../../escape.txt", "z", 201, ""},
				{"GET", "/../escape.txt", "", 200, "z"},
			},
			wantFiles: map[string]string{"escape.txt": "z"},
		},
		{
			name: "a symlink out of the root is refused",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
					t.Fatal(err)
				}
			},
			steps: []step{
				{"PUT", "/out/x", "z", 403, ""},
				{"GET", "/out/", "", 403, ""},
			},
			wantFiles: map[string]string{"out": "->"},
		},
		{
			name: "missing, delete and bad requests",
			steps: []step{
				{"GET", "/nope", "", 404, ""},
				{"PUT", "/", "x", 400, ""},
				{"PUT", "/dir/", "x", 400, ""},
				{"POST", "/f", "x", 405, ""},
				{"PUT", "/k/f", "x", 201, ""},
				{"DELETE", "/k", "", 409, ""},
				{"DELETE", "/k/f", "", 204, ""},
				{"DELETE", "/k/f", "", 404, ""},
				{"GET", "/k", "", 200, ""},
			},
			wantFiles: map[string]string{"k/": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { root.Close() })
			h := NewHandler(root)
			for _, s := range tt.steps {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(s.method, s.path, strings.NewReader(s.body)))
				if rec.Code != s.wantCode {
					t.Fatalf("%s %s = %d, want %d; body %q", s.method, s.path, rec.Code, s.wantCode, rec.Body)
				}
				if s.wantBody != "" && rec.Body.String() != s.wantBody {
					t.Fatalf("%s %s body = %q, want %q", s.method, s.path, rec.Body, s.wantBody)
				}
			}
			if diff := cmp.Diff(tt.wantFiles, tree(t, dir)); diff != "" {
				t.Errorf("files on disk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPutTooBig(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rec := httptest.NewRecorder()
	body := strings.NewReader(strings.Repeat("x", MaxFileBytes+1))
	NewHandler(root).ServeHTTP(rec, httptest.NewRequest("PUT", "/big", body))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("PUT of %d bytes = %d, want 413", MaxFileBytes+1, rec.Code)
	}
	// Neither the file nor the temporary it was written to may stay behind.
	if diff := cmp.Diff(map[string]string{}, tree(t, dir)); diff != "" {
		t.Errorf("files on disk mismatch (-want +got):\n%s", diff)
	}
}

// tree maps every path under dir to its contents; directories end in "/" and symlinks map to
// "->".
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			got[rel] = "->"
		case d.IsDir():
			got[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return got
}
