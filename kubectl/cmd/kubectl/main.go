// Command kubectl is minik8s's own kubectl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"minik8s.io/kubectl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
