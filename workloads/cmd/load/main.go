// Command load burns CPU and holds memory on HTTP request, for autoscaler tests; image
// minik8s/load.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"minik8s.io/workloads/internal/load"
	"minik8s.io/workloads/internal/server"
)

func main() {
	logger := server.Logger("load")
	if err := run(logger); err != nil {
		logger.Error("exit", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	addr, err := server.Addr(os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	g := &load.Generator{}
	defer g.Stop()
	delay, err := server.ShutdownDelay(os.Getenv)
	if err != nil {
		return err
	}
	return server.Run(ctx, logger, addr, load.NewHandler(g), delay)
}
