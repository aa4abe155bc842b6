package hostsfile

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Markers of the managed block.
const (
	Begin = "# BEGIN minik8s ingress hosts"
	End   = "# END minik8s ingress hosts"
)

// Render returns content with the managed block set to hosts: replaced where it is, added at
// the end where there is none, removed when hosts is empty. Everything outside the block is
// kept byte for byte. Wildcard hosts (*.example.com) cannot be written in a hosts file and are
// left to cluster DNS. A Begin without End takes the rest of the file as the block.
func Render(content []byte, hosts map[string][]netip.Addr) []byte {
	block := renderBlock(hosts)
	before, after, found := cutBlock(content)
	var out bytes.Buffer
	out.Write(before)
	if block != "" {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		out.WriteString(block)
	}
	if found {
		out.Write(after)
	}
	return out.Bytes()
}

func renderBlock(hosts map[string][]netip.Addr) string {
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		if !strings.HasPrefix(h, "*") && h != "" {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(Begin + " (written by kubeproxy from the cluster's Ingresses; edits here are lost)\n")
	for _, h := range names {
		for _, ip := range hosts[h] {
			b.WriteString(ip.String() + "\t" + h + "\n")
		}
	}
	b.WriteString(End + "\n")
	return b.String()
}

// cutBlock splits content around the managed block (markers included, with the End line's
// newline).
func cutBlock(content []byte) (before, after []byte, found bool) {
	start := lineStart(content, Begin)
	if start < 0 {
		return content, nil, false
	}
	rest := content[start:]
	end := lineStart(rest, End)
	if end < 0 {
		return content[:start], nil, true
	}
	tail := rest[end:]
	if nl := bytes.IndexByte(tail, '\n'); nl >= 0 {
		tail = tail[nl+1:]
	} else {
		tail = nil
	}
	return content[:start], tail, true
}

// lineStart finds the first line of content that starts with prefix.
func lineStart(content []byte, prefix string) int {
	for off := 0; off < len(content); {
		if bytes.HasPrefix(content[off:], []byte(prefix)) {
			return off
		}
		nl := bytes.IndexByte(content[off:], '\n')
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return -1
}

// Update sets the managed block of the file at path and reports whether it wrote. Under an
// exclusive lock on <path>.minik8s.lock it reads the file, and writes only if the content
// changes: to a temporary file beside it, renamed over it (readers see the old or the new
// file, never half of one). Where the file is a mount point (a container's /etc/hosts) the
// rename cannot work, and the content is written in place instead.
func Update(path string, hosts map[string][]netip.Addr) (bool, error) {
	lock, err := os.OpenFile(path+".minik8s.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, fmt.Errorf("hosts file lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return false, fmt.Errorf("hosts file lock: %w", err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too

	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	next := Render(old, hosts)
	if bytes.Equal(old, next) {
		return false, nil
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".minik8s-*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(next)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return false, fmt.Errorf("write %s: %w", path, werr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		if !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.EXDEV) {
			return false, fmt.Errorf("replace %s: %w", path, err)
		}
		if err := os.WriteFile(path, next, mode); err != nil {
			return false, fmt.Errorf("write %s in place: %w", path, err)
		}
	}
	return true, nil
}
