// Command pause is PID 1 of a pod sandbox: it holds the pod's namespaces open while the app
// containers come and go, and exits 0 as soon as it is told to stop. Image minik8s/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// PID 1 gets no default signal handling from the kernel: without these handlers SIGTERM
	// would be ignored and every pod deletion would wait out its grace period for SIGKILL.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	// If the pod shares its PID namespace, orphans are re-parented to us; reap them so they do
	// not pile up as zombies.
	child := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	// One line for the container log, written once the handlers are in place (tests wait on it).
	_, _ = os.Stdout.WriteString("pause: waiting for SIGTERM or SIGINT\n")
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
			reap()
		}
	}
}

func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
