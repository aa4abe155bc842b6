package atomicdir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const (
	// DataDir is the symlink naming the current timestamped directory.
	DataDir = "..data"
	// newDataDir is the symlink made beside DataDir and renamed over it.
	newDataDir = "..data_tmp"

	maxFileNameLength = 255
	maxPathLength     = 4096
)

// File is one file of a payload: its content and permission bits.
type File struct {
	Data []byte
	Mode os.FileMode
}

// Write makes dir hold exactly payload, keyed by relative path. Names starting with ".." are
// the writer's own and refused. Nothing is written when dir already holds the payload, so
// calling it on every sync of a pod costs a read of each file. Calls for one dir must not run
// concurrently: the pod's worker serialises them.
//
// The steps, in the order that keeps every moment consistent for a reader:
//  1. write the payload into a new directory ..<timestamp>.<random>;
//  2. create the user-visible symlinks <name> -> ..data/<name> for new top-level names;
//  3. point ..data_tmp at the new directory and rename it over ..data (atomic);
//  4. remove the user-visible names the payload no longer has, then the old directory.
func Write(dir string, payload map[string]File) error {
	clean, err := validate(payload)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create volume dir: %w", err)
	}
	dataPath := filepath.Join(dir, DataDir)
	oldTS, err := os.Readlink(dataPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", DataDir, err)
	}
	var stale []string
	if oldTS != "" {
		oldPath := filepath.Join(dir, oldTS)
		if stale, err = pathsToRemove(clean, oldPath); err != nil {
			return err
		}
		same, err := holds(oldPath, clean)
		if err != nil {
			return err
		}
		if same && len(stale) == 0 && visible(dir, clean) {
			return nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	// Other users (a container's non-root user) must be able to traverse it, whatever the
	// kubelet's umask.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := writeFiles(tsDir, clean); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}
	if err := linkVisible(dir, clean); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}
	tmpLink := filepath.Join(dir, newDataDir)
	_ = os.Remove(tmpLink) // left by a write that failed half-way
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("link %s: %w", newDataDir, err)
	}
	if err := os.Rename(tmpLink, dataPath); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return fmt.Errorf("swap %s: %w", DataDir, err)
	}
	var errs []error
	for _, p := range stale {
		// Only the top level holds symlinks; deeper paths went with the old directory.
		if strings.Contains(p, string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove old path %s: %w", p, err))
		}
	}
	if oldTS != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			errs = append(errs, fmt.Errorf("remove old data dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// validate returns the payload with cleaned paths, or the first path that may not be written.
func validate(payload map[string]File) (map[string]File, error) {
	out := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		out[filepath.Clean(p)] = f
	}
	return out, nil
}

// validatePath refuses what could escape the directory or collide with the writer's own
// names, with Kubernetes' messages.
func validatePath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(p, string(os.PathSeparator))
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// holds reports whether dir already has every file of payload with the same content and mode.
func holds(dir string, payload map[string]File) (bool, error) {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("compare %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != f.Mode.Perm() {
			return false, nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return false, fmt.Errorf("compare %s: %w", p, err)
		}
		if !bytes.Equal(data, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

// pathsToRemove lists what the old data directory has and the payload does not, parents of
// new files excepted.
func pathsToRemove(payload map[string]File, oldDir string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for sub := p; sub != "." && sub != string(os.PathSeparator); sub = filepath.Dir(sub) {
			keep[sub] = true
		}
	}
	var out []string
	err := filepath.WalkDir(oldDir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(oldDir, path)
		if err != nil || rel == "." {
			return err
		}
		if !keep[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list old data dir: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

func writeFiles(dir string, payload map[string]File) error {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		// WriteFile's mode passes through the umask; the volume's mode must not.
		if err := os.Chmod(full, f.Mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// topLevel is the first element of each payload path: the names readers see in dir.
func topLevel(payload map[string]File) map[string]bool {
	out := map[string]bool{}
	for p := range payload {
		name, _, _ := strings.Cut(p, string(os.PathSeparator))
		out[name] = true
	}
	return out
}

// visible reports whether every top-level name is already a symlink through ..data.
func visible(dir string, payload map[string]File) bool {
	for name := range topLevel(payload) {
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join(DataDir, name) {
			return false
		}
	}
	return true
}

// linkVisible makes each top-level name a symlink through ..data. Anything else in its place
// (a plain file from a writer without this layout) is replaced.
func linkVisible(dir string, payload map[string]File) error {
	for name := range topLevel(payload) {
		path, want := filepath.Join(dir, name), filepath.Join(DataDir, name)
		target, err := os.Readlink(path)
		if err == nil && target == want {
			continue
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			if err := os.RemoveAll(path); err != nil {
				return fmt.Errorf("replace %s: %w", name, err)
			}
		}
		if err := os.Symlink(want, path); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	return nil
}
