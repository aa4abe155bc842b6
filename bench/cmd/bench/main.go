// Command bench measures the minik8s control plane against its own storage
// and prints a table: API create latency and throughput against raw etcd,
// and change-event latency through RabbitMQ against a raw etcd watch. It
// builds and starts a private apiserver and writes only to a temporary
// directory, which it removes unless -keep is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"minik8s.io/bench/internal/suite"
)

func main() {
	cfg := suite.Defaults
	var keep bool
	var timeout time.Duration
	var logLevel string
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.StringVar(&cfg.Binary, "apiserver", "", "prebuilt apiserver binary (default: build one from the workspace)")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", cfg.AMQPURL, "RabbitMQ the apiserver publishes to and the benchmark consumes from")
	fs.IntVar(&cfg.Creates, "creates", cfg.Creates, "measured creates per system in the latency test")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured creates before the latency test")
	fs.IntVar(&cfg.PayloadBytes, "payload", cfg.PayloadBytes, "bytes in each ConfigMap's data value")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients in the throughput test")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per system in the throughput test")
	fs.DurationVar(&cfg.RoundTime, "round-time", cfg.RoundTime, "length of one throughput round")
	fs.IntVar(&cfg.EventRate, "event-rate", cfg.EventRate, "changes per second in the event test")
	fs.DurationVar(&cfg.EventTime, "event-time", cfg.EventTime, "length of the event test")
	fs.BoolVar(&cfg.Profile, "profile", false, "build the apiserver with pprof and print its CPU profile of the throughput and event tests")
	fs.BoolVar(&keep, "keep", false, "keep the work directory (apiserver log, etcd data, profiles)")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.StringVar(&logLevel, "log-level", "info", "progress log level on stderr: debug, info, warn or error")
	_ = fs.Parse(os.Args[1:])

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "bench: --log-level: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("component", "bench")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := run(ctx, cfg, keep, log); err != nil {
		log.Error("benchmark failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg suite.Config, keep bool, log *slog.Logger) error {
	dir, err := os.MkdirTemp("", "minik8s-bench-")
	if err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	if keep {
		log.Info("keeping work directory", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	cfg.Workdir = dir
	rep, err := suite.Run(ctx, cfg, log)
	if err != nil {
		return err
	}
	rep.Print(os.Stdout)
	return nil
}
