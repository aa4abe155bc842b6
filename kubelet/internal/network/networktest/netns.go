package networktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// NetNSPrefix starts the name of every namespace these helpers create, so a cleanup can find
// leftovers of an interrupted run with `ip netns list | grep mk8st-`.
const NetNSPrefix = "mk8st-"

// NewNetNS creates a network namespace with `ip netns add` and deletes it when the test ends.
// It returns the namespace's path under /run/netns.
func NewNetNS(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := NetNSPrefix + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s (integration tests need root and iproute2)", name, err, out)
	}
	path := filepath.Join("/run/netns", name)
	t.Cleanup(func() { DeleteNetNS(t, path) })
	return path
}

// DeleteNetNS removes a namespace made by NewNetNS; a namespace already gone is fine.
func DeleteNetNS(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	if out, err := exec.Command("ip", "netns", "delete", filepath.Base(path)).CombinedOutput(); err != nil {
		t.Errorf("ip netns delete %s: %v: %s", path, err, out)
	}
}

// InNetNS runs fn on a thread switched into the namespace at path ("" means the current one):
// what fn execs (iptables) runs there, and sockets it makes stay there.
func InNetNS(path string, fn func() error) error { return inNetNS(path, fn) }

// inNetNS runs fn on a thread switched into the namespace at path; "" means the current one.
// Sockets keep the namespace they were created in, so a listener or connection made in fn can
// be used from any goroutine afterwards.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own netns: %w", err)
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer target.Close()
	if err := setns(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	ferr := fn()
	if err := setns(self); err != nil {
		// Leave the thread locked: the goroutine's exit then destroys it instead of letting
		// other goroutines run in the pod's namespace.
		return fmt.Errorf("return from netns %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// Serve listens on TCP port in the namespace at path and answers every connection with reply
// and a newline. The listener closes when the test ends.
func Serve(t *testing.T, path string, port int, reply string) {
	t.Helper()
	ServeFunc(t, path, port, func(net.Conn) string { return reply })
}

// ServeFunc is Serve answering what reply says for each connection, such as the address the
// connection came from.
func ServeFunc(t *testing.T, path string, port int, reply func(net.Conn) string) {
	t.Helper()
	var ln net.Listener
	err := inNetNS(path, func() error {
		var err error
		ln, err = net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		return err
	})
	if err != nil {
		t.Fatalf("listen on port %d in %s: %v", port, path, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(c, reply(c)+"\n")
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
}

// Dial connects from the namespace at path ("" for the host) to addr and returns what the
// peer wrote before closing, without the trailing newline.
func Dial(ctx context.Context, path, addr string) (string, error) {
	var c net.Conn
	err := inNetNS(path, func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		var err error
		c, err = d.DialContext(ctx, "tcp4", addr)
		return err
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return "", fmt.Errorf("read from %s: %w", addr, err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// DialEventually retries Dial until it returns want or the deadline passes. Links and rules
// are in place when SetUp returns, but a bridge port can take a moment to forward.
func DialEventually(t *testing.T, path, addr, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got string
	var err error
	for {
		got, err = Dial(ctx, path, addr)
		if err == nil && got == want {
			return
		}
		select {
		case <-ctx.Done():
			from := path
			if from == "" {
				from = "the host"
			}
			t.Fatalf("dial %s from %s: got %q, err %v; want %q", addr, from, got, err, want)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// NodeIP returns the host's primary IPv4 address: the source of its default route.
func NodeIP(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "route", "get", "1.1.1.1").Output()
	if err != nil {
		t.Fatalf("ip route get: %v (the hostPort test needs a default route to find the node IP)", err)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "src" {
			return f[i+1]
		}
	}
	t.Fatalf("no src in %q", out)
	return ""
}

// FreePort returns a TCP port nothing on the host listens on right now.
func FreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
