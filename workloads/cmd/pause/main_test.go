package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPauseExitsZeroOnSignal builds the binary and runs it as a real process: signal delivery is
// the whole point of pause, and a fake would prove nothing.
func TestPauseExitsZeroOnSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatalf("stdout pipe: %v", err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatalf("start pause: %v", err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			// A signal sent before the handlers are installed would kill the process instead
			// of testing them; pause says when they are.
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("read pause's first line: %v", err)
			}
			if !strings.Contains(line, "waiting") {
				t.Fatalf("pause's first line = %q, want it to say it is waiting", line)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("send %v: %v", sig, err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause after %v: %v, want exit status 0", sig, err)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("pause still running 30s after %v", sig)
			}
		})
	}
}
