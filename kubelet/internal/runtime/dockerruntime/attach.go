package dockerruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"minik8s.io/kubelet/internal/runtime"
)

// ExecStream implements runtime.Runtime. Stdout and stderr are always attached, even when the
// caller wants neither, because the end of Docker's output stream is how the end of the
// process shows.
func (r *Runtime) ExecStream(ctx context.Context, id string, cmd []string, s runtime.Streams) (int, error) {
	created, err := r.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd:          cmd,
		Tty:          s.TTY,
		AttachStdin:  s.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, mapErr(err))
	}
	att, err := r.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: s.TTY})
	if err != nil {
		return 0, fmt.Errorf("exec in %s: attach: %w", id, mapErr(err))
	}
	resized := r.forwardResizes(s.Resize, func(ctx context.Context, o container.ResizeOptions) error {
		return r.cli.ContainerExecResize(ctx, created.ID, o)
	})
	defer resized()
	if err := copyStreams(ctx, att, s, s.TTY, true); err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	return r.execExitCode(ctx, id, created.ID)
}

// Attach implements runtime.Runtime.
func (r *Runtime) Attach(ctx context.Context, id string, s runtime.Streams) error {
	c, err := r.Inspect(ctx, id)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	if c.State != runtime.StateRunning {
		return fmt.Errorf("attach to %s: %w", id, runtime.ErrNotRunning)
	}
	if !c.Stdin {
		s.Stdin = nil
	}
	att, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{
		Stream: true, Stdin: s.Stdin != nil, Stdout: true, Stderr: true,
	})
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, mapErr(err))
	}
	if c.TTY {
		resized := r.forwardResizes(s.Resize, func(ctx context.Context, o container.ResizeOptions) error {
			return r.cli.ContainerResize(ctx, id, o)
		})
		defer resized()
	}
	// Closing stdin when the client's ends is what StdinOnce is for; without it the
	// container keeps its stdin open for the next client, which Docker does on its own.
	if err := copyStreams(ctx, att, s, c.TTY, c.StdinOnce); err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	return nil
}

// copyStreams copies the client's stdin into a hijacked connection and its output out, until
// the output ends or ctx does. With closeStdin the end of the client's stdin half-closes the
// connection, which the daemon passes on as the end of the process's stdin.
func copyStreams(ctx context.Context, att types.HijackedResponse, s runtime.Streams, tty, closeStdin bool) error {
	// The hijacked connection ignores ctx on its own.
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	defer att.Close()
	if s.Stdin != nil {
		// It ends when the client's stdin does or once the connection is closed below; the
		// caller unblocks a Read still pending then (see runtime.Streams).
		go func() {
			_, err := io.Copy(att.Conn, s.Stdin)
			if err == nil && closeStdin {
				_ = att.CloseWrite()
			}
		}()
	}
	stdout, stderr := orDiscard(s.Stdout), orDiscard(s.Stderr)
	var err error
	if tty {
		// A terminal has one output, not framed.
		_, err = io.Copy(stdout, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("copy output: %w", err)
	}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// resizeTimeout bounds one resize; the daemon itself waits up to 10 s for an exec to start.
const resizeTimeout = 15 * time.Second

// forwardResizes applies each size from sizes with resize until the returned stop is called.
// A failed resize is dropped: the terminal keeps its size and the session goes on.
func (r *Runtime) forwardResizes(sizes <-chan runtime.TerminalSize, resize func(context.Context, container.ResizeOptions) error) (stop func()) {
	if sizes == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case sz, ok := <-sizes:
				if !ok {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, resizeTimeout)
				_ = resize(rctx, container.ResizeOptions{Width: uint(sz.Width), Height: uint(sz.Height)})
				cancel()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
