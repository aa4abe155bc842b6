package fake

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"minik8s.io/kubelet/internal/runtime"
)

// attachment is one attached client's output.
type attachment struct {
	mu             sync.Mutex // one write at a time, as from one pipe
	stdout, stderr io.Writer
}

func (a *attachment) write(stream string, p []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.stdout
	if stream == "stderr" {
		w = a.stderr
	}
	if w != nil {
		_, _ = w.Write(p)
	}
}

// ExecStream implements runtime.Runtime. The result is SetExec's if set (its output goes to
// Stdout); otherwise the image's Program runs with cmd as its arguments; otherwise the command
// succeeds with no output.
func (r *Runtime) ExecStream(ctx context.Context, id string, cmd []string, s runtime.Streams) (int, error) {
	r.mu.Lock()
	if err := r.recordLocked("ExecStream", id, cmd); err != nil {
		r.mu.Unlock()
		return 0, err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		r.mu.Unlock()
		return 0, fmt.Errorf("exec: %w", err)
	}
	if ct.c.State != runtime.StateRunning {
		r.mu.Unlock()
		return 0, fmt.Errorf("exec in %s: %w", id, runtime.ErrNotRunning)
	}
	stdout, stderr := orDiscard(s.Stdout), orDiscard(s.Stderr)
	if s.TTY {
		stderr = stdout
	}
	if ct.exec != nil {
		res := *ct.exec
		r.mu.Unlock()
		if _, err := stdout.Write(res.Output); err != nil {
			return 0, fmt.Errorf("exec in %s: write output: %w", id, err)
		}
		return res.ExitCode, nil
	}
	prog := r.programs[normalize(ct.cfg.Image)]
	if prog == nil {
		r.mu.Unlock()
		return 0, ctx.Err()
	}
	var stdin io.Reader = strings.NewReader("")
	if s.Stdin != nil {
		stdin = s.Stdin
	}
	// One lock per output, so a program writing from two goroutines (or both streams into a
	// terminal) hands the writers one write at a time, as a pipe would.
	p := r.newProcess(ct, cmd, stdin, &lockedWriter{w: stdout}, &lockedWriter{w: stderr}, s.TTY)
	if s.TTY {
		p.stderr = p.stdout
	}
	r.mu.Unlock()

	stopResizes := follow(s.Resize, p.resize)
	defer stopResizes()
	stop := context.AfterFunc(ctx, func() { p.kill(false) })
	defer stop()
	code := prog(p.ctx, p)
	p.kill(false)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return code, nil
}

// Attach implements runtime.Runtime: the streams get what the main process writes from now
// on and feed its stdin (containers created with Stdin), until the container stops.
func (r *Runtime) Attach(ctx context.Context, id string, s runtime.Streams) error {
	r.mu.Lock()
	if err := r.recordLocked("Attach", id, nil); err != nil {
		r.mu.Unlock()
		return err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("attach: %w", err)
	}
	if ct.c.State != runtime.StateRunning {
		r.mu.Unlock()
		return fmt.Errorf("attach to %s: %w", id, runtime.ErrNotRunning)
	}
	a := &attachment{stdout: s.Stdout, stderr: s.Stderr}
	if ct.cfg.TTY {
		a.stderr = s.Stdout
	}
	ct.attached = append(ct.attached, a)
	proc, stdin, once := ct.proc, ct.stdin, ct.cfg.StdinOnce
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		ct.attached = slices.DeleteFunc(ct.attached, func(x *attachment) bool { return x == a })
	}()

	if s.Stdin != nil && stdin != nil {
		go func() {
			_, err := io.Copy(stdin, s.Stdin)
			if err == nil && once {
				stdin.Close()
			}
		}()
	}
	if proc != nil && ct.cfg.TTY {
		defer follow(s.Resize, proc.resize)()
	}
	for {
		r.mu.Lock()
		running := ct.c.State == runtime.StateRunning && ct.proc == proc
		changed := ct.changed
		r.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// NetNS implements runtime.Runtime with a path that does not exist on the host.
func (r *Runtime) NetNS(ctx context.Context, id string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("NetNS", id, nil); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return "", fmt.Errorf("netns: %w", err)
	}
	if ct.c.State != runtime.StateRunning {
		return "", fmt.Errorf("netns %s: %w", id, runtime.ErrNotRunning)
	}
	return fmt.Sprintf("/proc/%d/ns/net", ct.c.Pid), nil
}

// DialNetNS connects to port on the loopback of the network namespace at path, a path NetNS
// returned: the fake's namespaces hold only what a Program's Listen opened.
func (r *Runtime) DialNetNS(ctx context.Context, path string, port uint16) (net.Conn, error) {
	pidText, ok := strings.CutPrefix(path, "/proc/")
	pidText, ok2 := strings.CutSuffix(pidText, "/ns/net")
	pid, err := strconv.Atoi(pidText)
	if !ok || !ok2 || err != nil {
		return nil, fmt.Errorf("dial %d in %s: not a network namespace of this runtime", port, path)
	}
	r.mu.Lock()
	key := ""
	for _, ct := range r.containers {
		if ct.c.State == runtime.StateRunning && ct.c.Pid == pid {
			key = ct.netKey
		}
	}
	r.mu.Unlock()
	if key == "" {
		return nil, fmt.Errorf("dial %d in %s: no such network namespace", port, path)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	return r.dial(ctx, key, addr, strconv.Itoa(int(port)))
}

// follow applies every size from sizes until the returned stop is called.
func follow(sizes <-chan runtime.TerminalSize, apply func(runtime.TerminalSize)) (stop func()) {
	if sizes == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case sz, ok := <-sizes:
				if !ok {
					return
				}
				apply(sz)
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
