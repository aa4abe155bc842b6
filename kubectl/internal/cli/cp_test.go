package cli

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilexec "k8s.io/utils/exec"
)

func TestParseCpArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		src, dst fileSpec
		wantErr  string
	}{
		{name: "upload", args: []string{"dir/", "web:/tmp/dir/"},
			src: fileSpec{path: "dir"}, dst: fileSpec{pod: "web", path: "/tmp/dir"}},
		{name: "download with namespace", args: []string{"team/web:/etc/hosts", "hosts"},
			src: fileSpec{namespace: "team", pod: "web", path: "/etc/hosts"}, dst: fileSpec{path: "hosts"}},
		{name: "relative remote path", args: []string{"web:data", "."},
			src: fileSpec{pod: "web", path: "data"}, dst: fileSpec{path: "."}},
		{name: "root stays root", args: []string{"a", "web:/"},
			src: fileSpec{path: "a"}, dst: fileSpec{pod: "web", path: "/"}},
		{name: "backslashes in the pod path", args: []string{`web:C:\tmp`, "x"},
			src: fileSpec{pod: "web", path: "C:/tmp"}, dst: fileSpec{path: "x"}},
		{name: "both local", args: []string{"a", "b"}, wantErr: "one of src or dest must be a remote file specification"},
		{name: "both remote", args: []string{"p:a", "q:b"}, wantErr: "one of src or dest must be a local file specification"},
		{name: "empty remote path", args: []string{"p:", "b"}, wantErr: "filepath can not be empty"},
		{name: "colon first", args: []string{":a", "b"}, wantErr: errFileSpec.Error()},
		{name: "too many slashes", args: []string{"a/b/c:x", "b"}, wantErr: errFileSpec.Error()},
		{name: "one argument", args: []string{"a"}, wantErr: "source and destination are required"},
		{name: "three arguments", args: []string{"a", "b", "c"}, wantErr: "source and destination are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst, err := parseCpArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]fileSpec{tt.src, tt.dst}, []fileSpec{src, dst}, cmp.AllowUnexported(fileSpec{})); diff != "" {
				t.Errorf("specs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemotePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/dir":       "tmp/dir",
		"tmp/dir":        "tmp/dir",
		"//tmp/./x/../y": "tmp/y",
		"../../etc":      "etc",
		"/":              "",
		".":              "",
	} {
		if got := remotePrefix(in); got != want {
			t.Errorf("remotePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// entry is what the round-trip test compares: the type, permission bits and content of one
// path of a tree.
type entry struct {
	Mode    fs.FileMode
	Content string
	Link    string
}

func readTree(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{Mode: fi.Mode() & (fs.ModeType | fs.ModePerm)}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Content = string(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Link, _ = os.Readlink(p)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A tree packed for upload unpacks (as it comes back in a download, with the container's
// prefix) into the same tree: directories, empty ones too, files byte for byte, and modes,
// including a read-only directory with contents.
func TestTarRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	binary := make([]byte, 1<<20)
	if _, err := rand.Read(binary); err != nil {
		t.Fatal(err)
	}
	mk := func(rel string, mode fs.FileMode, content []byte) {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if content == nil {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("bin", 0o755, binary)
	mk("secret", 0o600, []byte("s"))
	mk("sub/deeper/file.txt", 0o640, []byte("deep\n"))
	mk("empty", 0o750, nil)
	mk("readonly/inside", 0o444, []byte("ro"))
	if err := os.Chmod(filepath.Join(src, "readonly"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "readonly"), 0o755) })

	var archive, warnings bytes.Buffer
	if err := packTar(&archive, src, "copied", &warnings); err != nil {
		t.Fatal(err)
	}
	// The container's tar names what it sends by the path asked for: tmp/copied/...
	var renamed bytes.Buffer
	rewriteNames(t, &archive, &renamed, func(n string) string { return "tmp/" + n })

	dest := filepath.Join(t.TempDir(), "dest")
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dest, "readonly"), 0o755) })
	if err := unpackTar(&renamed, unpackOptions{prefix: "tmp/copied", dest: dest, warn: &warnings}); err != nil {
		t.Fatal(err)
	}
	if warnings.Len() != 0 {
		t.Errorf("warnings: %s", warnings.String())
	}
	if diff := cmp.Diff(readTree(t, src), readTree(t, dest)); diff != "" {
		t.Errorf("unpacked tree differs (-packed +unpacked):\n%s", diff)
	}
}

// A single file packs under the destination's name and unpacks to the local name asked for.
func TestTarSingleFile(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a.txt"), "hello")
	var archive bytes.Buffer
	if err := packTar(&archive, filepath.Join(dir, "a.txt"), "b.txt", io.Discard); err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, archive.Bytes())
	if diff := cmp.Diff([]string{"b.txt"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	dest := filepath.Join(dir, "out.txt")
	if err := unpackTar(&archive, unpackOptions{prefix: "b.txt", dest: dest, warn: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(dest); err != nil || string(data) != "hello" {
		t.Errorf("out.txt = %q, %v", data, err)
	}
}

// Entries that climb out of the destination are skipped with kubectl's warning and nothing
// is written outside; symlinks are never created (one could point anywhere); an entry not
// under the path asked for means a corrupted stream.
func TestUnpackRefusesEscapes(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "dest")
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	add := func(hdr *tar.Header, body string) {
		hdr.Size = int64(len(body))
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	add(&tar.Header{Name: "tmp/x/ok.txt", Typeflag: tar.TypeReg}, "ok")
	add(&tar.Header{Name: "tmp/x/../escaped.txt", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "tmp/x/sub/../../escaped-dir", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "tmp/x/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, "")
	add(&tar.Header{Name: "tmp/x/link2", Typeflag: tar.TypeSymlink, Linkname: "../../"}, "")
	add(&tar.Header{Name: "tmp/x/inside/../fine.txt", Typeflag: tar.TypeReg}, "fine")
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if err := unpackTar(bytes.NewReader(archive.Bytes()), unpackOptions{prefix: "tmp/x", dest: dest, warn: &warn, symlinkHint: "use tar"}); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, root)
	want := map[string]entry{
		".":             {Mode: fs.ModeDir | 0o700},
		"dest":          {Mode: fs.ModeDir | 0o755},
		"dest/ok.txt":   {Mode: 0o644, Content: "ok"},
		"dest/fine.txt": {Mode: 0o644, Content: "fine"},
	}
	got["."] = entry{Mode: fs.ModeDir | 0o700} // the temp dir's own mode is not ours
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	wantWarn := []string{
		`warning: file "` + filepath.Join(root, "escaped.txt") + `" is outside target destination, skipping`,
		`warning: file "` + filepath.Join(root, "escaped-dir") + `" is outside target destination, skipping`,
		`warning: skipping symlink: "` + filepath.Join(dest, "link") + `" -> "/etc/passwd" (use tar)`,
		`warning: skipping symlink: "` + filepath.Join(dest, "link2") + `" -> "../../"`,
	}
	if diff := cmp.Diff(wantWarn, strings.Split(strings.TrimSpace(warn.String()), "\n")); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// Entries land one level up if at all, where readTree would have seen them.
	// An entry outside the path asked for: the stream is not what was asked for.
	err := unpackTar(bytes.NewReader(archive.Bytes()), unpackOptions{prefix: "tmp/y", dest: dest, warn: io.Discard})
	if err == nil || err.Error() != "tar contents corrupted" {
		t.Errorf("foreign entry: err = %v", err)
	}
}

// An existing symlink where a file lands is replaced, not written through.
func TestUnpackDoesNotFollowExistingSymlink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside.txt")
	writeTestFile(t, outside, "keep")
	dest := filepath.Join(root, "dest")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dest, "f")); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	if err := tw.WriteHeader(&tar.Header{Name: "x/f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, "new")
	tw.Close()
	if err := unpackTar(&archive, unpackOptions{prefix: "x", dest: dest, warn: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("the symlink's target was written: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dest, "f")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("dest/f is %v, %v; want a regular file", fi.Mode(), err)
	}
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

// rewriteNames copies an archive renaming its entries.
func rewriteNames(t *testing.T, in io.Reader, out io.Writer, rename func(string) string) {
	t.Helper()
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdr.Name = rename(hdr.Name)
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// --retries: a stream that breaks is started again from the byte it reached, with kubectl's
// line; the command's own failure (an exit status) is not retried, nor is a copy past its
// retries.
func TestTarReaderRetries(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	broken := errors.New("connection reset")
	tests := []struct {
		name       string
		maxRetries int
		// cut is how many bytes each run delivers before failing (the last run: all).
		cuts    []int
		fail    error
		wantOut string
		wantErr error
	}{
		{name: "resumed twice", maxRetries: 3, cuts: []int{5, 7}, fail: broken,
			wantOut: "Resuming copy at 5 bytes, retry 1/3\nResuming copy at 12 bytes, retry 2/3\n"},
		{name: "unlimited", maxRetries: -1, cuts: []int{1, 1, 1}, fail: broken,
			wantOut: "Resuming copy at 1 bytes, retry 1/-1\nResuming copy at 2 bytes, retry 2/-1\nResuming copy at 3 bytes, retry 3/-1\n"},
		{name: "out of retries", maxRetries: 1, cuts: []int{5, 5}, fail: broken,
			wantOut: "Resuming copy at 5 bytes, retry 1/1\nDropping out copy after 1 retries\n", wantErr: broken},
		{name: "no retries", maxRetries: 0, cuts: []int{5}, fail: broken, wantErr: broken},
		{name: "exit status is final", maxRetries: 3, cuts: []int{5}, fail: utilexec.CodeExitError{Err: errors.New("exit 2"), Code: 2},
			wantErr: utilexec.CodeExitError{Err: errors.New("exit 2"), Code: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var offsets []int64
			run := 0
			start := func(offset int64, w io.Writer) error {
				offsets = append(offsets, offset)
				defer func() { run++ }()
				rest := data[offset:]
				if run < len(tt.cuts) && tt.cuts[run] < len(rest) {
					if _, err := w.Write(rest[:tt.cuts[run]]); err != nil {
						return err
					}
					return tt.fail
				}
				_, err := w.Write(rest)
				return err
			}
			var out bytes.Buffer
			r := startTarReader(start, tt.maxRetries, &out)
			defer r.close()
			got, err := io.ReadAll(r)
			if tt.wantErr != nil {
				if err == nil || err.Error() != tt.wantErr.Error() {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			} else if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read %q, %v; want %q", got, err, data)
			}
			if out.String() != tt.wantOut {
				t.Errorf("printed %q, want %q", out.String(), tt.wantOut)
			}
			var want []int64
			var at int64
			for i := 0; i < len(offsets); i++ {
				want = append(want, at)
				if i < len(tt.cuts) {
					at += int64(tt.cuts[i])
				}
			}
			if diff := cmp.Diff(want, offsets); diff != "" {
				t.Errorf("start offsets (-want +got):\n%s", diff)
			}
		})
	}
}
