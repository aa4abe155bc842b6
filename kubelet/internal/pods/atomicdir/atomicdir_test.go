package atomicdir

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapshot reads what a container would see in dir: every file reached through the visible
// names, with its content and mode, and whether each visible name is a link through ..data.
func snapshot(t *testing.T, dir string) (files map[string]string, modes map[string]os.FileMode, links []string) {
	t.Helper()
	files, modes = map[string]string{}, map[string]os.FileMode{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			links = append(links, e.Name()+" -> "+target)
		}
		root := filepath.Join(dir, e.Name())
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Stat(path)
			if err != nil || fi.IsDir() {
				if err == nil && path == root {
					// A symlink to a directory: WalkDir does not follow it.
					return walkInto(dir, path, files, modes)
				}
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			b, err := os.ReadFile(path)
			files[rel], modes[rel] = string(b), fi.Mode().Perm()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(links)
	return files, modes, links
}

func walkInto(base, link string, files map[string]string, modes map[string]os.FileMode) error {
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(base, link)
	return filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sub, _ := filepath.Rel(real, path)
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		files[filepath.Join(rel, sub)], modes[filepath.Join(rel, sub)] = string(b), fi.Mode().Perm()
		return err
	})
}

func dataDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.Name() != DataDir {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWrite(t *testing.T) {
	type step struct {
		payload map[string]File
		files   map[string]string
		modes   map[string]os.FileMode
		links   []string
		// rewritten says whether the step makes a new data directory.
		rewritten bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "first write links every top-level name through ..data",
			steps: []step{{
				payload:   map[string]File{"token": {Data: []byte("t1"), Mode: 0o644}, "sub/dir/ca.crt": {Data: []byte("ca"), Mode: 0o400}},
				files:     map[string]string{"token": "t1", "sub/dir/ca.crt": "ca"},
				modes:     map[string]os.FileMode{"token": 0o644, "sub/dir/ca.crt": 0o400},
				links:     []string{"sub -> ..data/sub", "token -> ..data/token"},
				rewritten: true,
			}},
		},
		{
			name: "an update swaps the data directory",
			steps: []step{
				{payload: map[string]File{"token": {Data: []byte("t1"), Mode: 0o644}}, files: map[string]string{"token": "t1"},
					modes: map[string]os.FileMode{"token": 0o644}, links: []string{"token -> ..data/token"}, rewritten: true},
				{payload: map[string]File{"token": {Data: []byte("t2"), Mode: 0o644}}, files: map[string]string{"token": "t2"},
					modes: map[string]os.FileMode{"token": 0o644}, links: []string{"token -> ..data/token"}, rewritten: true},
			},
		},
		{
			name: "the same payload writes nothing",
			steps: []step{
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}}, files: map[string]string{"a": "1"},
					modes: map[string]os.FileMode{"a": 0o644}, links: []string{"a -> ..data/a"}, rewritten: true},
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}}, files: map[string]string{"a": "1"},
					modes: map[string]os.FileMode{"a": 0o644}, links: []string{"a -> ..data/a"}, rewritten: false},
			},
		},
		{
			name: "a mode change alone rewrites",
			steps: []step{
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}}, files: map[string]string{"a": "1"},
					modes: map[string]os.FileMode{"a": 0o644}, links: []string{"a -> ..data/a"}, rewritten: true},
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o600}}, files: map[string]string{"a": "1"},
					modes: map[string]os.FileMode{"a": 0o600}, links: []string{"a -> ..data/a"}, rewritten: true},
			},
		},
		{
			name: "a removed key disappears, nested and top level",
			steps: []step{
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}, "d/x": {Data: []byte("3"), Mode: 0o644}, "d/y": {Data: []byte("4"), Mode: 0o644}},
					files: map[string]string{"a": "1", "b": "2", "d/x": "3", "d/y": "4"},
					modes: map[string]os.FileMode{"a": 0o644, "b": 0o644, "d/x": 0o644, "d/y": 0o644},
					links: []string{"a -> ..data/a", "b -> ..data/b", "d -> ..data/d"}, rewritten: true},
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "d/x": {Data: []byte("3"), Mode: 0o644}},
					files: map[string]string{"a": "1", "d/x": "3"},
					modes: map[string]os.FileMode{"a": 0o644, "d/x": 0o644},
					links: []string{"a -> ..data/a", "d -> ..data/d"}, rewritten: true},
			},
		},
		{
			name: "an empty payload empties the volume",
			steps: []step{
				{payload: map[string]File{"a": {Data: []byte("1"), Mode: 0o644}}, files: map[string]string{"a": "1"},
					modes: map[string]os.FileMode{"a": 0o644}, links: []string{"a -> ..data/a"}, rewritten: true},
				{payload: map[string]File{}, files: map[string]string{}, modes: map[string]os.FileMode{}, rewritten: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			for i, s := range tt.steps {
				before, _ := os.Readlink(filepath.Join(dir, DataDir))
				if err := Write(dir, s.payload); err != nil {
					t.Fatalf("step %d: Write: %v", i, err)
				}
				after, err := os.Readlink(filepath.Join(dir, DataDir))
				if err != nil {
					t.Fatalf("step %d: %s: %v", i, DataDir, err)
				}
				if got := before != after; got != s.rewritten {
					t.Errorf("step %d: data dir changed %s -> %s: rewritten = %t, want %t", i, before, after, got, s.rewritten)
				}
				if d := cmp.Diff([]string{after}, dataDirs(t, dir)); d != "" {
					t.Errorf("step %d: data dirs left (-want +got):\n%s", i, d)
				}
				files, modes, links := snapshot(t, dir)
				if d := cmp.Diff(s.files, files); d != "" {
					t.Errorf("step %d: files (-want +got):\n%s", i, d)
				}
				if d := cmp.Diff(s.modes, modes); d != "" {
					t.Errorf("step %d: modes (-want +got):\n%s", i, d)
				}
				if d := cmp.Diff(s.links, links); d != "" {
					t.Errorf("step %d: links (-want +got):\n%s", i, d)
				}
			}
		})
	}
}

// A reader going through the visible name while updates land sees one whole version or
// another, never a file being written: each version is complete before ..data points at it.
func TestWriteReaderNeverSeesPartialFile(t *testing.T) {
	dir := t.TempDir()
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10) }
	if err := Write(dir, map[string]File{"f": {Data: version(0), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		defer close(bad)
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, "f"))
			if err != nil {
				// The old directory may go between resolving ..data and opening the file;
				// a reader retries, as with any file replaced under it.
				continue
			}
			if len(b) != 64<<10 || bytes.Count(b, b[:1]) != len(b) {
				bad <- fmt.Sprintf("read %d bytes of mixed content", len(b))
				return
			}
		}
	}()
	for i := 1; i <= 100; i++ {
		if err := Write(dir, map[string]File{"f": {Data: version(i), Mode: 0o644}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if msg, ok := <-bad; ok {
		t.Fatal(msg)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || !bytes.Equal(b, version(100)) {
		t.Errorf("after the last write: %d bytes, %v; want version 100", len(b), err)
	}
}

func TestWriteReplacesPlainFiles(t *testing.T) {
	dir := t.TempDir()
	// What a writer without the layout left behind.
	if err := os.WriteFile(filepath.Join(dir, "k"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, map[string]File{"k": {Data: []byte("fresh"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	files, _, links := snapshot(t, dir)
	if d := cmp.Diff(map[string]string{"k": "fresh"}, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"k -> ..data/k"}, links); d != "" {
		t.Errorf("links (-want +got):\n%s", d)
	}
}

func TestWriteInvalidPaths(t *testing.T) {
	tests := []struct {
		path, err string
	}{
		{"", `invalid path: must not be empty: ""`},
		{"/etc/passwd", "invalid path: must be relative path: /etc/passwd"},
		{"a/../../b", "invalid path: must not contain '..': a/../../b"},
		{"..data", "invalid path: must not start with '..': ..data"},
		{strings.Repeat("x", 256), "invalid path: filenames must be less than or equal to 255 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.err, func(t *testing.T) {
			dir := t.TempDir()
			err := Write(dir, map[string]File{"ok": {Data: []byte("1"), Mode: 0o644}, tt.path: {Data: []byte("x"), Mode: 0o644}})
			if err == nil || err.Error() != tt.err {
				t.Fatalf("Write(%q) = %v, want %q", tt.path, err, tt.err)
			}
			if _, err := os.Lstat(filepath.Join(dir, DataDir)); err == nil {
				t.Errorf("an invalid payload wrote %s", DataDir)
			}
		})
	}
}
