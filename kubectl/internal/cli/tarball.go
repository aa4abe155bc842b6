package cli

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// packTar writes the file or directory tree at src to w as a tar archive whose entries are
// named name, name/child, ...: what `tar -x -C DIR` in the container unpacks to DIR/name.
// Directories, regular files and symlinks keep their modes; other files (devices, sockets,
// pipes) are skipped with a warning.
func packTar(w io.Writer, src, name string, warn io.Writer) error {
	tw := tar.NewWriter(w)
	if err := packEntry(tw, src, name, warn); err != nil {
		return err
	}
	return tw.Close()
}

func packEntry(tw *tar.Writer, src, name string, warn io.Writer) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	var link string
	switch mode := fi.Mode(); {
	case mode.IsDir(), mode.IsRegular():
	case mode&fs.ModeSymlink != 0:
		if link, err = os.Readlink(src); err != nil {
			return err
		}
	default:
		fmt.Fprintf(warn, "warning: skipping %q: not a regular file, directory or symlink\n", src)
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	switch {
	case fi.Mode().IsRegular():
		return copyFileInto(tw, src)
	case fi.IsDir():
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := packEntry(tw, filepath.Join(src, e.Name()), path.Join(name, e.Name()), warn); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFileInto(w io.Writer, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// unpackOptions say how an archive from a container lands on the local disk.
type unpackOptions struct {
	// prefix is the copied path as the container's tar names it (no leading slash); every
	// entry starts with it, and it is replaced by dest.
	prefix, dest string
	// warn receives the warnings for entries that are skipped.
	warn io.Writer
	// symlinkHint, when set, is added to the first skipped symlink's warning: how to copy
	// the tree with its links (kubectl's "consider using ... exec ... tar" advice).
	symlinkHint string
}

// unpackTar extracts the archive r. As kubectl does, it refuses what could write outside
// dest: an entry whose path leaves dest (a "../" in it) and symlinks are skipped with a
// warning. Regular files and directories get the archive's permission bits (directories
// once their contents are written, so a read-only one can still be filled).
func unpackTar(r io.Reader, o unpackOptions) error {
	tr := tar.NewReader(r)
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	hinted := false
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		// Go's reader may flag "../" names itself; within below judges them against dest.
		if err != nil && !(errors.Is(err, tar.ErrInsecurePath) && hdr != nil) {
			return err
		}
		if !strings.HasPrefix(hdr.Name, o.prefix) {
			return errors.New("tar contents corrupted")
		}
		target := filepath.Join(o.dest, filepath.FromSlash(hdr.Name[len(o.prefix):]))
		if !within(o.dest, target) {
			fmt.Fprintf(o.warn, "warning: file %q is outside target destination, skipping\n", target)
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, hdr.FileInfo().Mode().Perm()})
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := writeFile(target, tr, hdr.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if o.symlinkHint != "" && !hinted {
				fmt.Fprintf(o.warn, "warning: skipping symlink: %q -> %q (%s)\n", target, hdr.Linkname, o.symlinkHint)
				hinted = true
				continue
			}
			fmt.Fprintf(o.warn, "warning: skipping symlink: %q -> %q\n", target, hdr.Linkname)
		default:
			fmt.Fprintf(o.warn, "warning: skipping %q: unsupported file type %q\n", target, hdr.Typeflag)
		}
	}
	// Deepest first: a parent's mode must not stop its children's chmod.
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	return nil
}

// within reports whether target is dest or below it.
func within(dest, target string) bool {
	rel, err := filepath.Rel(dest, target)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// writeFile writes r to name with mode perm. A symlink already at name is replaced, not
// followed, so a copy never writes through a link to elsewhere.
func writeFile(name string, r io.Reader, perm fs.FileMode) error {
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(name, perm)
}
