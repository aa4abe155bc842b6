package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a thread switched into the network namespace at path (a file such as
// /run/netns/<name> or /proc/<pid>/ns/net); "" runs fn where the caller is. Sockets keep the
// namespace they were made in, and a process started from fn (os/exec forks from the calling
// thread) starts in it. fn must not start goroutines that expect to be in the namespace.
func Do(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own network namespace: %w", err)
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", path, err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked: when its goroutine ends Go destroys it rather than let
		// other goroutines run in the wrong namespace.
		return fmt.Errorf("return from network namespace %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Dial connects to address inside the network namespace at path. The socket is made on a
// thread of a goroutine of its own switched into the namespace (so a thread that cannot switch
// back dies with that goroutine), and keeps the namespace afterwards: the connection is used
// like any other.
func Dial(ctx context.Context, path, network, address string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		var c net.Conn
		err := Do(path, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, address)
			return err
		})
		if err != nil && c != nil {
			c.Close()
			c = nil
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// Listen listens on address inside the network namespace at path.
func Listen(path, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := Do(path, func() error {
		var err error
		ln, err = net.Listen(network, address)
		return err
	})
	return ln, err
}
