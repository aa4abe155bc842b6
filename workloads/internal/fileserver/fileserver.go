package fileserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// MaxFileBytes bounds one PUT; the server is for test files, not bulk data.
const MaxFileBytes = 64 << 20

// Handler serves a directory:
//
//	GET/HEAD <dir>   one entry per line, directories with a trailing "/"
//	GET/HEAD <file>  the contents (ranges and conditional requests honoured)
//	PUT <file>       write the body, creating parent directories; 201 new, 200 replaced
//	DELETE <path>    remove a file or an empty directory; 204
//
// All access goes through an os.Root, so ".." or a symlink cannot reach outside the directory.
type Handler struct {
	root *os.Root
}

// NewHandler serves root; the caller keeps ownership and closes it after the server stops.
func NewHandler(root *os.Root) *Handler {
	return &Handler{root: root}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := relName(r.URL.Path)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r, name)
	case http.MethodPut:
		h.put(w, r, name)
	case http.MethodDelete:
		if err := h.root.Remove(name); err != nil {
			fail(w, fmt.Errorf("remove %s: %w", name, err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// relName turns a URL path into a name relative to the root; "/" is ".".
func relName(urlPath string) string {
	name := strings.TrimPrefix(path.Clean("/"+urlPath), "/")
	if name == "" {
		return "."
	}
	return name
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, name string) {
	f, err := h.root.Open(name)
	if err != nil {
		fail(w, fmt.Errorf("open %s: %w", name, err))
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		fail(w, fmt.Errorf("stat %s: %w", name, err))
		return
	}
	if !info.IsDir() {
		http.ServeContent(w, r, name, info.ModTime(), f)
		return
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		fail(w, fmt.Errorf("list %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	// ReadDir on an open directory returns entries in directory order; sort for stable output.
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		suffix := ""
		if e.IsDir() {
			suffix = "/"
		}
		fmt.Fprintf(w, "%s%s\n", e.Name(), suffix)
	}
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, name string) {
	if name == "." || strings.HasSuffix(r.URL.Path, "/") {
		http.Error(w, "PUT needs a file name", http.StatusBadRequest)
		return
	}
	if dir := path.Dir(name); dir != "." {
		if err := h.root.MkdirAll(dir, 0o755); err != nil {
			fail(w, fmt.Errorf("create %s: %w", dir, err))
			return
		}
	}
	_, statErr := h.root.Stat(name)
	existed := statErr == nil

	// Write aside and rename, so a reader in another container sees the old file or the new
	// one, never half of it.
	tmp, err := h.tempName(name)
	if err != nil {
		fail(w, err)
		return
	}
	n, err := h.write(tmp, http.MaxBytesReader(w, r.Body, MaxFileBytes))
	if err == nil {
		err = h.root.Rename(tmp, name)
	}
	if err != nil {
		_ = h.root.Remove(tmp)
		fail(w, fmt.Errorf("write %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if existed {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusCreated)
	}
	fmt.Fprintf(w, "%d bytes\n", n)
}

func (h *Handler) tempName(name string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("temp name: %w", err)
	}
	return path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(b[:])), nil
}

func (h *Handler) write(name string, body io.Reader) (int64, error) {
	f, err := h.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// fail maps an error to a status: missing is 404, too big 413, a symlink out of the root 403
// (os.Root does not export that error, so its text is matched).
func fail(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.As(err, &tooBig):
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
	case strings.Contains(err.Error(), "escapes from parent"), errors.Is(err, fs.ErrPermission):
		http.Error(w, err.Error(), http.StatusForbidden)
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOTDIR):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
