package build

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// LabelNamespace names the namespace of the Function an image belongs to (with
// sv1.LabelFunction and sv1.LabelVersion).
const LabelNamespace = sv1.GroupName + "/namespace"

// LabelCluster names the cluster whose serverless component built an image: clusters that
// share a Docker engine (make up's and make cluster's on one host) each remove only their own.
const LabelCluster = sv1.GroupName + "/cluster"

// DefaultBase is the runtime base image function images are built on.
const DefaultBase = "minik8s/python-runtime:latest"

// Source is what one version of a function is built from.
type Source struct {
	// Cluster is the cluster building it (the image's LabelCluster; none when empty).
	Cluster         string
	Namespace, Name string
	// Version is the Function's status.version being built (1, 2, ...).
	Version int64
	// Handler is "module.function"; the module must be one of Files.
	Handler string
	// Files maps relative paths to contents (spec.source).
	Files map[string]string
	// Requirements is a pip requirements file; empty installs nothing.
	Requirements string
}

// Image is the reference of a function version's image.
func Image(namespace, name string, version int64) string {
	return Repository(namespace, name) + ":v" + strconv.FormatInt(version, 10)
}

// Repository is the image repository of all versions of a function.
func Repository(namespace, name string) string {
	return "minik8s-fn/" + namespace + "." + name
}

// Labels are the labels a function version's image carries; LabelCluster when cluster is
// not empty.
func Labels(cluster, namespace, name string, version int64) map[string]string {
	l := map[string]string{
		LabelNamespace:    namespace,
		sv1.LabelFunction: name,
		sv1.LabelVersion:  strconv.FormatInt(version, 10),
	}
	if cluster != "" {
		l[LabelCluster] = cluster
	}
	return l
}

// HandlerFile is where a function image names its handler for the runtime (the pod's
// FUNCTION_HANDLER, when set, wins).
const HandlerFile = "/opt/minik8s/function/handler"

// Dockerfile is the build recipe of a function image on base. Every step costs a container
// commit (seconds on some storage drivers), so there are few: the source, then one RUN that
// compiles it (a syntax error fails the build; a cold start compiles nothing) and names the
// handler, and one that labels the image. Requirements come first, as root, so that a new source reuses their layer; pip gets a
// short timeout and one retry, so a build with no package index in reach fails in seconds.
func Dockerfile(base string, src Source, pipArgs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", base)
	if src.Requirements != "" {
		b.WriteString("USER root\n")
		b.WriteString("COPY requirements.txt /opt/minik8s/requirements.txt\n")
		args := append([]string{"pip", "install", "--no-cache-dir", "--retries", "1", "--timeout", "10"}, pipArgs...)
		args = append(args, "-r", "/opt/minik8s/requirements.txt")
		fmt.Fprintf(&b, "RUN %s\n", strings.Join(args, " "))
		b.WriteString("USER 10001\n")
	}
	b.WriteString("COPY --chown=10001:10001 function/ /function/\n")
	fmt.Fprintf(&b, "RUN python3 -m compileall -q /function && echo %s > %s\n", src.Handler, HandlerFile)
	// One LABEL instruction: Docker's build options would add one step per label.
	labels := Labels(src.Cluster, src.Namespace, src.Name, src.Version)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("LABEL")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, strconv.Quote(labels[k]))
	}
	b.WriteString("\n")
	return b.String()
}

// maxFiles and maxBytes bound a context; the API limits a Function's source well below.
const (
	maxFiles = 10000
	maxBytes = 64 << 20
)

// Check validates a source for building: a handler "module.function" whose module is in the
// files, file names that stay under /function.
func Check(src Source) error {
	if src.Namespace == "" || src.Name == "" {
		return fmt.Errorf("source has no namespace or name")
	}
	if src.Version <= 0 {
		return fmt.Errorf("version must be positive, not %d", src.Version)
	}
	if len(src.Files) == 0 {
		return fmt.Errorf("source has no files")
	}
	if len(src.Files) > maxFiles {
		return fmt.Errorf("source has %d files, more than %d", len(src.Files), maxFiles)
	}
	size := len(src.Requirements)
	for name, data := range src.Files {
		if _, err := cleanName(name); err != nil {
			return err
		}
		size += len(data)
	}
	if size > maxBytes {
		return fmt.Errorf("source is %d bytes, more than %d", size, maxBytes)
	}
	module, fn, ok := splitHandler(src.Handler)
	if !ok {
		return fmt.Errorf("handler %q is not module.function", src.Handler)
	}
	file := strings.ReplaceAll(module, ".", "/")
	if !hasFile(src.Files, file+".py") && !hasFile(src.Files, file+"/__init__.py") {
		return fmt.Errorf("handler %q: the source has no %s.py nor %s/__init__.py for its function %s", src.Handler, file, file, fn)
	}
	return nil
}

func hasFile(files map[string]string, want string) bool {
	for name := range files {
		if n, err := cleanName(name); err == nil && n == want {
			return true
		}
	}
	return false
}

func splitHandler(h string) (module, fn string, ok bool) {
	i := strings.LastIndexByte(h, '.')
	if i <= 0 || i == len(h)-1 {
		return "", "", false
	}
	module, fn = h[:i], h[i+1:]
	for _, part := range append(strings.Split(module, "."), fn) {
		if !identifier(part) {
			return "", "", false
		}
	}
	return module, fn, true
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// cleanName is a file name relative to /function, refused when it would leave it.
func cleanName(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("file name %q must be a relative path", name)
	}
	c := path.Clean(name)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("file name %q leaves the function's folder", name)
	}
	return c, nil
}

// Context is the build context (a tar) of a source: Dockerfile, requirements.txt when there are
// requirements, and the files under function/. The same source gives the same bytes (sorted
// entries, fixed times and modes), so Docker's cache serves a rebuild.
func Context(base string, src Source, pipArgs []string) ([]byte, error) {
	if err := Check(src); err != nil {
		return nil, err
	}
	type entry struct {
		name string
		data []byte
	}
	entries := []entry{{"Dockerfile", []byte(Dockerfile(base, src, pipArgs))}}
	if src.Requirements != "" {
		entries = append(entries, entry{"requirements.txt", []byte(src.Requirements)})
	}
	dirs := map[string]bool{"function": true}
	for name, data := range src.Files {
		c, _ := cleanName(name)
		full := "function/" + c
		for d := path.Dir(full); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
		entries = append(entries, entry{full, []byte(data)})
	}
	for d := range dirs {
		entries = append(entries, entry{d + "/", nil})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for i, e := range entries {
		if i > 0 && entries[i-1].name == e.name {
			return nil, fmt.Errorf("file %q is in the source twice", strings.TrimPrefix(e.name, "function/"))
		}
		h := &tar.Header{Name: e.name, ModTime: epoch, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("build context: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	return buf.Bytes(), nil
}
