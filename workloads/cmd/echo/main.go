// Command echo answers every HTTP request with JSON naming the pod that served it; image
// minik8s/echo.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"minik8s.io/workloads/internal/echo"
	"minik8s.io/workloads/internal/server"
)

func main() {
	logger := server.Logger("echo")
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
	hostname, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("interface addresses: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	h := echo.NewHandler(echo.IdentityFromEnv(os.Getenv, hostname, addrs))
	delay, err := server.ShutdownDelay(os.Getenv)
	if err != nil {
		return err
	}
	return server.Run(ctx, logger, addr, h, delay)
}
