package netns

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a thread switched into the network namespace at path (a file such as
// /run/netns/<name>); "" runs fn where the caller is. Sockets keep the namespace they were
// made in, and a process started from fn (os/exec forks from the calling thread) starts in
// it. fn must not start goroutines that expect to be in the namespace.
func Do(path string, fn func() error) error {
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
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked: when the goroutine ends Go destroys it rather than let
		// other goroutines run in the wrong namespace.
		return fmt.Errorf("return from netns %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return ferr
}
