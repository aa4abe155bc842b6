package networktest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"minik8s.io/shared/netns"
)

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
	err := netns.Do(path, func() error {
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
	err := netns.Do(path, func() error {
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
