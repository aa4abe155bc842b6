package runtimetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/runtime"
)

// buffer is an output that a runtime may write from several goroutines.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written, with a terminal's carriage returns taken out.
func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ReplaceAll(b.b.String(), "\r", "")
}

// stdin feeds input and then ends, as a client that sends it and closes its stdin. The
// returned reader is closed when the test ends, which runtime.Streams asks of callers.
func stdin(t *testing.T, input string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.WriteString(pw, input)
		pw.CloseWithError(err)
	}()
	t.Cleanup(func() { pr.Close() })
	return pr
}

func sizes(s ...runtime.TerminalSize) <-chan runtime.TerminalSize {
	ch := make(chan runtime.TerminalSize, len(s))
	for _, sz := range s {
		ch <- sz
	}
	return ch
}

func testExecStream(t *testing.T, h *harness) {
	id := h.run(h.config("sleep", "forever"))
	h.waitState(id, runtime.StateRunning)
	type result struct {
		Code           int
		Stdout, Stderr string
	}
	for _, tc := range []struct {
		name  string
		cmd   []string
		stdin string // "" attaches none
		tty   bool
		size  []runtime.TerminalSize
		want  result
	}{
		{name: "separate outputs and the exit code", cmd: []string{HelperPath, "print", "out", "eprint", "err", "exit", "3"},
			want: result{Code: 3, Stdout: "out\n", Stderr: "err\n"}},
		{name: "stdin to its end", cmd: []string{HelperPath, "cat", "print", "after eof"}, stdin: "hello\nworld\n",
			want: result{Stdout: "hello\nworld\nafter eof\n"}},
		{name: "terminal with a size", cmd: []string{HelperPath, "eprint", "to the terminal", "winsize", "120x40"},
			tty: true, size: []runtime.TerminalSize{{Width: 120, Height: 40}},
			want: result{Stdout: "to the terminal\nsize 120x40\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr buffer
			s := runtime.Streams{Stdout: &stdout, Stderr: &stderr, TTY: tc.tty, Resize: sizes(tc.size...)}
			if tc.stdin != "" {
				s.Stdin = stdin(t, tc.stdin)
			}
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			code, err := h.rt.ExecStream(ctx, id, tc.cmd, s)
			if err != nil {
				t.Fatalf("ExecStream: %v", err)
			}
			got := result{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExecStream(%q) (-want +got):\n%s", tc.cmd, diff)
			}
		})
	}
	if err := h.rt.Stop(t.Context(), id, time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	_, err := h.rt.ExecStream(t.Context(), id, []string{HelperPath, "print", "x"}, runtime.Streams{})
	if !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("ExecStream in a stopped container: %v, want ErrNotRunning", err)
	}
}

// testAttach feeds the stdin of a container created with Stdin and StdinOnce: the end of the
// client's stdin ends the container's, so cat returns and the container exits.
func testAttach(t *testing.T, h *harness) {
	cfg := h.config("cat", "print", "bye")
	cfg.Stdin, cfg.StdinOnce = true, true
	id := h.run(cfg)
	c := h.waitState(id, runtime.StateRunning)
	if !c.Stdin || !c.StdinOnce || c.TTY {
		t.Errorf("Inspect: Stdin %v, StdinOnce %v, TTY %v; want true, true, false", c.Stdin, c.StdinOnce, c.TTY)
	}
	var stdout, stderr buffer
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	err := h.rt.Attach(ctx, id, runtime.Streams{Stdin: stdin(t, "ping\n"), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if got, want := stdout.String(), "ping\nbye\n"; got != want {
		t.Errorf("attached stdout = %q, want %q", got, want)
	}
	if c := h.waitState(id, runtime.StateExited); c.ExitCode != 0 {
		t.Errorf("after its stdin ended the container exited %d, want 0", c.ExitCode)
	}
	if err := h.rt.Attach(t.Context(), id, runtime.Streams{}); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("Attach to an exited container: %v, want ErrNotRunning", err)
	}
}

// testAttachTTY resizes the terminal of a container created with a TTY: the process waits for
// the size, so its output comes after the attach, and goes to stdout, stderr included.
func testAttachTTY(t *testing.T, h *harness) {
	cfg := h.config("winsize", "90x30", "eprint", "done")
	cfg.Stdin, cfg.TTY = true, true
	id := h.run(cfg)
	if c := h.waitState(id, runtime.StateRunning); !c.Stdin || c.StdinOnce || !c.TTY {
		t.Errorf("Inspect: Stdin %v, StdinOnce %v, TTY %v; want true, false, true", c.Stdin, c.StdinOnce, c.TTY)
	}
	var stdout, stderr buffer
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	err := h.rt.Attach(ctx, id, runtime.Streams{Stdout: &stdout, Stderr: &stderr, TTY: true,
		Resize: sizes(runtime.TerminalSize{Width: 90, Height: 30})})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	want := "size 90x30\ndone\n"
	if got := stdout.String() + stderr.String(); got != want {
		t.Errorf("attached output = %q on stdout and %q on stderr, want %q on stdout", stdout.String(), stderr.String(), want)
	}
	h.waitState(id, runtime.StateExited)
	// A terminal's output is not framed by stream in Docker's log.
	if got := strings.ReplaceAll(h.logs(id, runtime.LogOptions{Tail: -1}), "\r", ""); got != want {
		t.Errorf("logs of a TTY container = %q, want %q", got, want)
	}
}
