package fnsource

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// MaxBytes bounds a function's source as the apiserver does: the file names, their contents
// and the requirements together. The source is stored in the Function object, in etcd, whose
// values are kept small.
const MaxBytes = 1 << 20

// requirementsFile is the pip requirements file a folder may hold.
const requirementsFile = "requirements.txt"

// Files is a function's packed source.
type Files struct {
	// Source maps clean relative paths (forward slashes) to file contents.
	Source map[string]string
	// Requirements is the folder's requirements.txt, if it has one.
	Requirements    string
	HasRequirements bool
}

// Size is what the apiserver counts against MaxBytes.
func (f Files) Size() int {
	n := len(f.Requirements)
	for name, body := range f.Source {
		n += len(name) + len(body)
	}
	return n
}

// Pack replaces spec.sourcePath of a serverless Function with spec.source read from that
// file or folder, relative to the directory of manifest (the file the object came from; the
// working directory for stdin). A folder's requirements.txt becomes spec.requirements unless
// the manifest sets it. Other objects, and Functions without sourcePath, are left as they are.
func Pack(obj *unstructured.Unstructured, manifest string) error {
	gvk := obj.GroupVersionKind()
	if gvk.Group != serverlessv1.GroupName || gvk.Kind != "Function" {
		return nil
	}
	rel, found, err := unstructured.NestedString(obj.Object, "spec", "sourcePath")
	if err != nil {
		return fmt.Errorf("function %q: spec.sourcePath: %w", obj.GetName(), err)
	}
	if !found || rel == "" {
		return nil
	}
	// NestedString found sourcePath, so spec is a map.
	spec := obj.Object["spec"].(map[string]any)
	if _, has := spec["source"]; has {
		return fmt.Errorf("function %q: set spec.source or spec.sourcePath, not both", obj.GetName())
	}
	p := Resolve(rel, manifest)
	files, err := Read(p)
	if err != nil {
		return fmt.Errorf("function %q: spec.sourcePath %q: %w", obj.GetName(), rel, err)
	}
	reqs, hasReq := spec["requirements"].(string)
	size := int64(files.Size())
	if hasReq {
		// The manifest's requirements win; the folder's are not sent.
		size += int64(len(reqs) - len(files.Requirements))
	}
	if size > MaxBytes {
		return fmt.Errorf("function %q: spec.sourcePath %q: %w", obj.GetName(), rel, tooLarge(p, size))
	}
	src := make(map[string]any, len(files.Source))
	for name, body := range files.Source {
		src[name] = body
	}
	delete(spec, "sourcePath")
	spec["source"] = src
	if files.HasRequirements && !hasReq {
		spec["requirements"] = files.Requirements
	}
	return nil
}

// Resolve is where sourcePath points: itself when absolute, else relative to the directory of
// the manifest, or to the working directory for stdin.
func Resolve(sourcePath, manifest string) string {
	if filepath.IsAbs(sourcePath) || manifest == "" || manifest == "STDIN" || manifest == "-" {
		return filepath.Clean(sourcePath)
	}
	return filepath.Join(filepath.Dir(manifest), sourcePath)
}

// Read packs a file (under its base name) or a folder: every file below it by its relative
// path, leaving out hidden files and folders, __pycache__ and compiled *.pyc. A folder's
// top-level requirements.txt is returned apart. Every file must be UTF-8 text.
func Read(p string) (Files, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Files{}, fmt.Errorf("%s does not exist", p)
		}
		return Files{}, err
	}
	out := Files{Source: map[string]string{}}
	var total int64
	if !st.IsDir() {
		body, err := readText(p)
		if err != nil {
			return Files{}, err
		}
		out.Source[filepath.Base(p)] = body
		return out, nil
	}
	err = filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if file == p {
			return nil
		}
		if skipped(d.Name(), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			// A link to a file is packed as the file; anything else has no place in source.
			if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		}
		rel, err := filepath.Rel(p, file)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if strings.ContainsAny(name, "\\\x00") || path.Clean(name) != name {
			return fmt.Errorf("%s: the file name cannot be sent (no backslashes, a clean relative path)", file)
		}
		body, err := readText(file)
		if err != nil {
			return err
		}
		if name == requirementsFile {
			out.Requirements, out.HasRequirements = body, true
			return nil
		}
		out.Source[name] = body
		// Stop early: the files alone (Pack adds the requirements) are bounded too.
		if total += int64(len(name) + len(body)); total > MaxBytes {
			return tooLarge(p, total)
		}
		return nil
	})
	if err != nil {
		return Files{}, err
	}
	if len(out.Source) == 0 {
		return Files{}, fmt.Errorf("%s holds no source files", p)
	}
	return out, nil
}

// skipped leaves out what is no source: hidden files and folders (.git, .venv), Python's
// caches and compiled files.
func skipped(name string, dir bool) bool {
	switch {
	case strings.HasPrefix(name, "."):
		return true
	case dir:
		return name == "__pycache__"
	}
	return strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo")
}

// tooLarge says why a source over MaxBytes is refused.
func tooLarge(p string, size int64) error {
	return fmt.Errorf("the source in %s is %d bytes or more, over the limit of %d: a function's source is stored in the Function object, in etcd, hence the limit (leave data files out, or have the function fetch them)", p, size, MaxBytes)
}

func readText(file string) (string, error) {
	st, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	if st.Size() > MaxBytes {
		return "", tooLarge(file, st.Size())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not UTF-8 text: a function's source is stored as text in the Function object, so binary files cannot be packed", file)
	}
	return string(data), nil
}
