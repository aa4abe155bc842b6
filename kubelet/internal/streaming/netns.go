package streaming

import (
	"context"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// DialNetNS connects to port on 127.0.0.1 inside the network namespace at path (a pod
// sandbox's /proc/<pid>/ns/net). The socket is made on a thread switched into the namespace
// and keeps it after the thread switches back, so the connection is used like any other.
func DialNetNS(ctx context.Context, path string, port uint16) (net.Conn, error) {
	target, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace: %w", err)
	}
	defer target.Close()
	type result struct {
		c   net.Conn
		err error
	}
	// A goroutine of its own, so a thread that cannot switch back dies with it.
	done := make(chan result, 1)
	go func() {
		c, err := dialIn(ctx, target, port)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

func dialIn(ctx context.Context, target *os.File, port uint16) (net.Conn, error) {
	goruntime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("open own network namespace: %w", err)
	}
	defer self.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("enter network namespace: %w", err)
	}
	var d net.Dialer
	c, dialErr := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked: when this goroutine ends the runtime destroys it instead of
		// letting other goroutines run in the pod's namespace.
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("leave network namespace: %w", err)
	}
	goruntime.UnlockOSThread()
	return c, dialErr
}
