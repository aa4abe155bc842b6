// Command fileserver reads and writes the files under $ROOT (default /data) over HTTP; image
// minik8s/fileserver.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"minik8s.io/workloads/internal/fileserver"
	"minik8s.io/workloads/internal/server"
)

func main() {
	logger := server.Logger("fileserver")
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
	dir := os.Getenv("ROOT")
	if dir == "" {
		dir = "/data"
	}
	// A missing directory is created: an image run without a volume still works.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("root %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("root %s: %w", dir, err)
	}
	defer root.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger.Info("root", "dir", dir)
	delay, err := server.ShutdownDelay(os.Getenv)
	if err != nil {
		return err
	}
	return server.Run(ctx, logger, addr, fileserver.NewHandler(root), delay)
}
