// Command helperbin is the helper script interpreter as a static binary, the entrypoint of the
// contract suite's Docker test image (built FROM scratch at /helper).
package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"minik8s.io/kubelet/internal/runtime/runtimetest/helper"
)

type realOS struct {
	kept [][]byte
}

func (*realOS) Stdin() io.Reader  { return os.Stdin }
func (*realOS) Stdout() io.Writer { return os.Stdout }

func (*realOS) TerminalSize() (width, height int, ok bool) {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}
func (*realOS) Stderr() io.Writer { return os.Stderr }

func (*realOS) Hostname() string {
	h, _ := os.Hostname()
	return h
}

func (*realOS) Signals() <-chan string {
	raw := make(chan os.Signal, 4)
	signal.Notify(raw, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2)
	out := make(chan string, 4)
	go func() {
		for s := range raw {
			name := "SIG" + map[os.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT",
				syscall.SIGQUIT: "QUIT", syscall.SIGHUP: "HUP", syscall.SIGUSR1: "USR1",
				syscall.SIGUSR2: "USR2"}[s]
			out <- name
		}
	}()
	return out
}

func (o *realOS) Alloc(n int64) error {
	b := make([]byte, n)
	// Touch every page so the memory is really charged to the cgroup.
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	o.kept = append(o.kept, b)
	return nil
}

func (*realOS) Burn(d time.Duration) {
	deadline := time.Now().Add(d)
	x := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 100000; i++ {
			x += i
		}
	}
	_ = x
}

func (*realOS) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (*realOS) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func main() {
	os.Exit(helper.Main(context.Background(), &realOS{}, os.Args[1:]))
}
