package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"minik8s.io/shared/client"
)

// checkDirTimeout bounds the `test -d` kubectl runs before an upload.
const checkDirTimeout = 30 * time.Second

var errFileSpec = errors.New("filespec must match the canonical format: [[namespace/]pod:]file/path")

// fileSpec is one side of a copy: a local path, or a path in a pod.
type fileSpec struct {
	namespace, pod string // pod is empty for a local path
	path           string
}

// parseFileSpec reads "[[namespace/]pod:]path" as kubectl does: the first colon ends the
// pod part, so a local path with a colon needs a "./" in front.
func parseFileSpec(arg string) (fileSpec, error) {
	i := strings.Index(arg, ":")
	switch {
	case i == 0:
		return fileSpec{}, errFileSpec
	case i < 0:
		return fileSpec{path: trimTrailingSlash(arg)}, nil
	}
	pod, file := arg[:i], trimTrailingSlash(strings.ReplaceAll(arg[i+1:], `\`, "/"))
	parts := strings.Split(pod, "/")
	switch len(parts) {
	case 1:
		return fileSpec{pod: parts[0], path: file}, nil
	case 2:
		return fileSpec{namespace: parts[0], pod: parts[1], path: file}, nil
	}
	return fileSpec{}, errFileSpec
}

func trimTrailingSlash(p string) string {
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		return p[:len(p)-1]
	}
	return p
}

// parseCpArgs checks the two specs: one local, one remote, neither path empty.
func parseCpArgs(args []string) (src, dst fileSpec, err error) {
	if len(args) != 2 {
		return src, dst, errors.New("source and destination are required")
	}
	if src, err = parseFileSpec(args[0]); err != nil {
		return src, dst, err
	}
	if dst, err = parseFileSpec(args[1]); err != nil {
		return src, dst, err
	}
	switch {
	case src.pod != "" && dst.pod != "":
		return src, dst, errors.New("one of src or dest must be a local file specification")
	case src.path == "" || dst.path == "":
		return src, dst, errors.New("filepath can not be empty")
	case src.pod == "" && dst.pod == "":
		return src, dst, errors.New("one of src or dest must be a remote file specification")
	}
	return src, dst, nil
}

// remotePrefix is how the container's tar names the copied path: without leading slashes
// and "../" steps, which tar strips.
func remotePrefix(p string) string {
	p = path.Clean(strings.TrimLeft(p, "/"))
	for strings.HasPrefix(p, "../") {
		p = strings.TrimPrefix(p, "../")
	}
	if p == "." || p == ".." {
		return ""
	}
	return strings.TrimPrefix(p, "/")
}

type cpFlags struct {
	container  string
	noPreserve bool
	retries    int
}

func newCp(o *options) *cobra.Command {
	var f cpFlags
	cmd := &cobra.Command{
		Use:   "cp <file-spec-src> <file-spec-dest>",
		Short: "Copy files and directories to and from containers",
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst, err := parseCpArgs(args)
			if err != nil {
				return err
			}
			cl, cfg, err := o.streamClients()
			if err != nil {
				return err
			}
			c := &copier{o: o, cl: cl, cfg: cfg, flags: f, parent: cmd.Parent().CommandPath()}
			if src.pod != "" {
				return c.fromPod(cmd.Context(), src, dst)
			}
			return c.toPod(cmd.Context(), src, dst)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "Container name. If omitted, use the kubectl.kubernetes.io/default-container annotation for selecting the container to be attached or the first container in the pod will be chosen")
	fl.BoolVar(&f.noPreserve, "no-preserve", false, "The copied file/directory's ownership and permissions will not be preserved in the container")
	fl.IntVar(&f.retries, "retries", 0, "Set number of retries to complete a copy operation from a container. Specify 0 to disable or any negative value for infinite retrying. The default is 0 (no retry).")
	return cmd
}

// copier runs the execs of one cp.
type copier struct {
	o      *options
	cl     *client.Client
	cfg    *rest.Config
	flags  cpFlags
	parent string // "kubectl", for the symlink advice
}

// target reads the pod and picks the container, printing kubectl's notice to notices.
func (c *copier) target(ctx context.Context, spec fileSpec, notices io.Writer) (*corev1.Pod, string, error) {
	ns := spec.namespace
	if ns == "" {
		ns = c.o.ns()
	}
	pod, err := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl).Get(ctx, ns, spec.pod, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil, "", fmt.Errorf("cannot exec into a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	name, notice, err := containerName(pod, c.flags.container)
	if notice != "" {
		fmt.Fprintln(notices, notice)
	}
	return pod, name, err
}

// toPod uploads: the local tree goes as a tar stream into `tar -x` in the container. A
// destination that is a directory receives the source under its own name, as cp does.
func (c *copier) toPod(ctx context.Context, src, dst fileSpec) error {
	if _, err := os.Stat(src.path); err != nil {
		return fmt.Errorf("%s doesn't exist in local filesystem", src.path)
	}
	pod, container, err := c.target(ctx, dst, c.o.ErrOut)
	if err != nil {
		return err
	}
	dest := dst.path
	checkCtx, cancel := context.WithTimeout(ctx, checkDirTimeout)
	err = execIn(checkCtx, c.cfg, pod, container, []string{"test", "-d", dest},
		remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
	cancel()
	switch {
	case err == nil:
		dest = path.Join(dest, filepath.Base(filepath.Clean(src.path)))
	case errors.Is(err, context.DeadlineExceeded):
		return err
	}
	dest = path.Clean(dest)

	command := []string{"tar", "-xmf", "-"}
	if c.flags.noPreserve {
		command = []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-"}
	}
	command = append(command, "-C", path.Dir(dest))

	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() {
		err := packTar(pw, filepath.Clean(src.path), path.Base(dest), c.o.ErrOut)
		pw.CloseWithError(err)
		packed <- err
	}()
	err = execIn(ctx, c.cfg, pod, container, command,
		remotecommand.StreamOptions{Stdin: pr, Stdout: c.o.Out, Stderr: c.o.ErrOut})
	// A session that ended early leaves the packer blocked on the pipe.
	pr.CloseWithError(errors.New("the copy ended"))
	if perr := <-packed; perr != nil && err == nil {
		return perr
	}
	return err
}

// fromPod downloads: `tar cf -` in the container, unpacked here. As in kubectl, the remote
// tar's complaints ("removing leading '/'") go to stdout.
func (c *copier) fromPod(ctx context.Context, src, dst fileSpec) error {
	pod, container, err := c.target(ctx, src, c.o.Out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := startTarReader(func(offset int64, w io.Writer) error {
		command := []string{"tar", "cf", "-", src.path}
		if c.flags.retries != 0 {
			quoted := strings.ReplaceAll(src.path, "'", `'\''`)
			command = []string{"sh", "-c", fmt.Sprintf("tar cf - '%s' | tail -c+%d", quoted, offset+1)}
		}
		return execIn(ctx, c.cfg, pod, container, command,
			remotecommand.StreamOptions{Stdout: w, Stderr: c.o.Out})
	}, c.flags.retries, c.o.Out)
	defer r.close()
	hint := fmt.Sprintf(`consider using "%s exec -n %q %q -- tar cf - %q | tar xf -"`, c.parent, pod.Namespace, pod.Name, src.path)
	err = unpackTar(r, unpackOptions{prefix: remotePrefix(src.path), dest: dst.path, warn: c.o.ErrOut, symlinkHint: hint})
	if err != nil {
		return err
	}
	// The archive's end marker is not the stream's end: read the rest to learn how the
	// remote tar finished (a missing path is its exit status 1).
	_, err = io.Copy(io.Discard, r)
	return err
}

// tarReader reads a remote tar's output, starting it again after a broken stream when
// retries allow, from the byte it had reached (--retries).
type tarReader struct {
	// start runs the remote command, writing its output from offset into w, until it ends.
	start      func(offset int64, w io.Writer) error
	maxRetries int // 0: none; negative: no limit
	out        io.Writer

	pr      *io.PipeReader
	read    int64
	retries int
}

// startTarReader starts the remote command and returns the reader of its output.
func startTarReader(start func(offset int64, w io.Writer) error, maxRetries int, out io.Writer) *tarReader {
	t := &tarReader{start: start, maxRetries: maxRetries, out: out}
	t.pr = t.run()
	return t
}

func (t *tarReader) run() *io.PipeReader {
	pr, pw := io.Pipe()
	offset := t.read
	go func() { pw.CloseWithError(t.start(offset, pw)) }()
	return pr
}

func (t *tarReader) Read(p []byte) (int, error) {
	n, err := t.pr.Read(p)
	t.read += int64(n)
	if err == nil || errors.Is(err, io.EOF) {
		return n, err
	}
	// The command's own failure is not the transport's, and a cancelled copy is over:
	// trying again would not help.
	var exit utilexec.ExitError
	if errors.As(err, &exit) || errors.Is(err, context.Canceled) {
		return n, err
	}
	if t.maxRetries < 0 || t.retries < t.maxRetries {
		t.retries++
		fmt.Fprintf(t.out, "Resuming copy at %d bytes, retry %d/%d\n", t.read, t.retries, t.maxRetries)
		t.pr.CloseWithError(err)
		t.pr = t.run()
		return n, nil
	}
	if t.maxRetries != 0 {
		fmt.Fprintf(t.out, "Dropping out copy after %d retries\n", t.retries)
	}
	return n, err
}

func (t *tarReader) close() { t.pr.CloseWithError(errors.New("the copy ended")) }
